// The geometric augmentations as registered transforms: random_rotation and random_affine
// (torchvision's RandomRotation and RandomAffine on PIL images, NEAREST), with their draws from the
// loader's per-example generator.
#include "components/data/pil/pil_ops.h"
#include "components/data/transforms/augment_common.h"

#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

namespace trainrun {
namespace {

struct AffineRanges {
  std::array<double, 2> degrees{0, 0};
  std::optional<std::array<double, 2>> translate;  // fractions of width and height
  std::optional<std::array<double, 2>> scale;
  std::vector<double> shear;  // empty, [x0, x1] or [x0, x1, y0, y1]
  std::vector<double> fill;
  std::optional<std::array<double, 2>> center;
};

// RandomAffine.get_params (angle, whole-pixel translation, scale, shear), then F.affine.
class RandomAffine : public Transform {
 public:
  explicit RandomAffine(AffineRanges r) : r_(std::move(r)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const double w = double(x.size(1)), h = double(x.size(0));
    const double angle = draw_uniform(r_.degrees[0], r_.degrees[1], rng);
    std::array<double, 2> t{0, 0};
    if (r_.translate) {
      const double dx = (*r_.translate)[0] * w, dy = (*r_.translate)[1] * h;
      t[0] = std::nearbyint(draw_uniform(-dx, dx, rng));
      t[1] = std::nearbyint(draw_uniform(-dy, dy, rng));
    }
    const double scale = r_.scale ? draw_uniform((*r_.scale)[0], (*r_.scale)[1], rng) : 1.0;
    std::array<double, 2> shear{0, 0};
    if (!r_.shear.empty()) shear[0] = draw_uniform(r_.shear[0], r_.shear[1], rng);
    if (r_.shear.size() == 4) shear[1] = draw_uniform(r_.shear[2], r_.shear[3], rng);
    return pil::affine(x, angle, t, scale, shear, r_.fill, r_.center ? &*r_.center : nullptr);
  }

 private:
  AffineRanges r_;
};

class RandomRotation : public Transform {
 public:
  RandomRotation(AffineRanges r, bool expand) : r_(std::move(r)), expand_(expand) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const double angle = draw_uniform(r_.degrees[0], r_.degrees[1], rng);
    return pil::rotate(x, angle, r_.fill, expand_, r_.center ? &*r_.center : nullptr);
  }

 private:
  AffineRanges r_;
  bool expand_;
};

std::optional<std::array<double, 2>> optional_pair(const Config& c, const std::string& key) {
  if (c.is_null(key)) return std::nullopt;
  return ordered_pair(c, key);
}

AffineRanges affine_ranges(const Config& c) {
  AffineRanges r;
  auto d = numbers(c, "degrees");
  if (d.size() == 1) {
    if (d[0] < 0) throw std::invalid_argument("degrees: a single value must be >= 0");
    r.degrees = {-d[0], d[0]};
  } else if (d.size() == 2 && d[0] <= d[1]) {
    r.degrees = {d[0], d[1]};
  } else {
    throw std::invalid_argument("degrees: expected one number or [min, max] with min <= max");
  }
  r.fill = fill_of(c);
  if (c.has("center") && !c.is_null("center")) {
    auto v = numbers(c, "center");
    if (v.size() != 2) throw std::invalid_argument("center: expected [x, y] in pixels");
    r.center = std::array<double, 2>{v[0], v[1]};
  }
  return r;
}

std::shared_ptr<Transform> make_random_affine(const Config& c, const ModelInput&) {
  AffineRanges r = affine_ranges(c);
  if (!c.is_null("translate")) {
    auto t = numbers(c, "translate");
    if (t.size() != 2) throw std::invalid_argument("translate: expected [a, b]");
    r.translate = std::array<double, 2>{t[0], t[1]};
  }
  r.scale = optional_pair(c, "scale");
  if (!c.is_null("shear")) {
    r.shear = numbers(c, "shear");
    if (r.shear.size() == 1) {
      if (r.shear[0] < 0) throw std::invalid_argument("shear: a single value must be >= 0");
      r.shear = {-r.shear[0], r.shear[0]};
    }
    if (r.shear.size() != 2 && r.shear.size() != 4)
      throw std::invalid_argument("shear: expected one number, [min, max] or [x0, x1, y0, y1]");
  }
  return std::make_shared<RandomAffine>(std::move(r));
}

}  // namespace

TRAINRUN_REGISTER(Transform, "random_rotation", "rotate by an angle drawn from degrees (torchvision RandomRotation, NEAREST)",
                  fill_param(Schema()
                                 .required("degrees", Type::FloatList, "d = [-d, d], or [min, max], counter-clockwise")
                                 .scalar_ok().range(-360, 360)
                                 .add("expand", Type::Bool, yaml("false"), "grow the output to hold the whole rotated image")
                                 .add("center", Type::FloatList, YAML::Node(), "[x, y] in pixels (null = the image's centre)")
                                 .nullable().min(0)),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<RandomRotation>(affine_ranges(c), c.get<bool>("expand"));
                  });

TRAINRUN_REGISTER(Transform, "random_affine",
                  "rotation, translation, scale and shear drawn from ranges (torchvision RandomAffine, NEAREST)",
                  fill_param(Schema()
                                 .required("degrees", Type::FloatList, "d = [-d, d], or [min, max]").scalar_ok().range(-360, 360)
                                 .add("translate", Type::FloatList, YAML::Node(), "[a, b]: |dx| <= a * width, |dy| <= b * height")
                                 .nullable().range(0, 1)
                                 .add("scale", Type::FloatList, YAML::Node(), "[min, max] scale factor").nullable().above(0)
                                 .add("shear", Type::FloatList, YAML::Node(),
                                      "s = x-shear in [-s, s], [min, max] for x, or [x0, x1, y0, y1] (degrees)")
                                 .nullable().scalar_ok().above(-90).below(90)
                                 .add("center", Type::FloatList, YAML::Node(), "[x, y] in pixels (null = the image's centre)")
                                 .nullable().min(0)),
                  make_random_affine);

}  // namespace trainrun
