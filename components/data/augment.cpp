// torchvision's augmentation transforms on PIL images (their draws from the loader's per-example
// generator, their pixels from components/data/pil_ops). The parameter names, defaults and
// ranges are torchvision's (transforms.py and autoaugment.py at 0.14).
#include "components/data/augment.h"

#include "components/data/pil_ops.h"
#include "components/data/transform_params.h"
#include "components/data/transform.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <array>
#include <cmath>
#include <optional>
#include <map>
#include <numeric>
#include <stdexcept>

namespace trainrun {
namespace {

constexpr double kRadToDeg = 180.0 / 3.14159265358979323846;  // CPython's math.degrees

int64_t draw_index(int64_t n, Rng& rng) { return int64_t(rng() % uint64_t(n)); }
double draw_uniform(double lo, double hi, Rng& rng) { return lo + (hi - lo) * uniform01(rng); }

at::Tensor float_linspace(double start, double end, int64_t steps) {
  return at::linspace(start, end, steps, at::TensorOptions().dtype(at::kFloat));
}

// --- the policies' ops and magnitudes -----------------------------------------------------------

struct OpSpace {
  std::string name;
  bool signed_magnitude;
  bool has_magnitudes;
};

// _augmentation_space's keys in order (RandAugment and TrivialAugmentWide; AutoAugment names its
// ops in its policies and adds Invert).
const std::vector<OpSpace>& wide_ops() {
  static const std::vector<OpSpace> ops = {
      {"Identity", false, false},   {"ShearX", true, true},     {"ShearY", true, true},
      {"TranslateX", true, true},   {"TranslateY", true, true}, {"Rotate", true, true},
      {"Brightness", true, true},   {"Color", true, true},      {"Contrast", true, true},
      {"Sharpness", true, true},    {"Posterize", false, true}, {"Solarize", false, true},
      {"AutoContrast", false, false}, {"Equalize", false, false}};
  return ops;
}

const OpSpace& op_space(const std::string& name) {
  static const OpSpace invert{"Invert", false, false};
  if (name == "Invert") return invert;
  for (auto& op : wide_ops())
    if (op.name == name) return op;
  throw std::invalid_argument("unknown augment op '" + name + "'");
}

// --- the policy transforms --------------------------------------------------------------------------

struct PolicyOptions {
  std::vector<double> fill;  // empty = 0
};

std::vector<double> fill_of(const Config& c) { return c.is_null("fill") ? std::vector<double>{} : numbers(c, "fill"); }

class RandAugment : public Transform {
 public:
  RandAugment(int64_t num_ops, int64_t magnitude, int64_t bins, PolicyOptions o)
      : num_ops_(num_ops), magnitude_(magnitude), bins_(bins), o_(std::move(o)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    at::Tensor img = x;
    const auto& ops = wide_ops();
    for (int64_t i = 0; i < num_ops_; ++i) {
      const OpSpace& op = ops[size_t(draw_index(int64_t(ops.size()), rng))];
      double m = op.has_magnitudes ? augment_magnitude(op.name, magnitude_, bins_, img.size(0), img.size(1)) : 0.0;
      if (op.signed_magnitude && draw_index(2, rng)) m *= -1.0;
      img = apply_augment_op(img, op.name, m, o_.fill);
    }
    return img;
  }

 private:
  int64_t num_ops_, magnitude_, bins_;
  PolicyOptions o_;
};

class TrivialAugmentWide : public Transform {
 public:
  TrivialAugmentWide(int64_t bins, PolicyOptions o) : bins_(bins), o_(std::move(o)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const auto& ops = wide_ops();
    const OpSpace& op = ops[size_t(draw_index(int64_t(ops.size()), rng))];
    double m = op.has_magnitudes
                   ? augment_magnitude(op.name, draw_index(bins_, rng), bins_, x.size(0), x.size(1), /*wide=*/true)
                   : 0.0;
    if (op.signed_magnitude && draw_index(2, rng)) m *= -1.0;
    return apply_augment_op(x, op.name, m, o_.fill);
  }

 private:
  int64_t bins_;
  PolicyOptions o_;
};

struct PolicyStep {
  const char* op;
  double p;
  int magnitude_bin;  // -1: none
};
using SubPolicy = std::array<PolicyStep, 2>;

// AutoAugmentPolicy's sub-policies, as torchvision lists them.
const std::vector<SubPolicy>& policy_named(const std::string& name) {
  static const std::map<std::string, std::vector<SubPolicy>> policies = {
      {"imagenet",
       {{{{"Posterize", 0.4, 8}, {"Rotate", 0.6, 9}}},          {{{"Solarize", 0.6, 5}, {"AutoContrast", 0.6, -1}}},
        {{{"Equalize", 0.8, -1}, {"Equalize", 0.6, -1}}},       {{{"Posterize", 0.6, 7}, {"Posterize", 0.6, 6}}},
        {{{"Equalize", 0.4, -1}, {"Solarize", 0.2, 4}}},        {{{"Equalize", 0.4, -1}, {"Rotate", 0.8, 8}}},
        {{{"Solarize", 0.6, 3}, {"Equalize", 0.6, -1}}},        {{{"Posterize", 0.8, 5}, {"Equalize", 1.0, -1}}},
        {{{"Rotate", 0.2, 3}, {"Solarize", 0.6, 8}}},           {{{"Equalize", 0.6, -1}, {"Posterize", 0.4, 6}}},
        {{{"Rotate", 0.8, 8}, {"Color", 0.4, 0}}},              {{{"Rotate", 0.4, 9}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.0, -1}, {"Equalize", 0.8, -1}}},       {{{"Invert", 0.6, -1}, {"Equalize", 1.0, -1}}},
        {{{"Color", 0.6, 4}, {"Contrast", 1.0, 8}}},            {{{"Rotate", 0.8, 8}, {"Color", 1.0, 2}}},
        {{{"Color", 0.8, 8}, {"Solarize", 0.8, 7}}},            {{{"Sharpness", 0.4, 7}, {"Invert", 0.6, -1}}},
        {{{"ShearX", 0.6, 5}, {"Equalize", 1.0, -1}}},          {{{"Color", 0.4, 0}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.4, -1}, {"Solarize", 0.2, 4}}},        {{{"Solarize", 0.6, 5}, {"AutoContrast", 0.6, -1}}},
        {{{"Invert", 0.6, -1}, {"Equalize", 1.0, -1}}},         {{{"Color", 0.6, 4}, {"Contrast", 1.0, 8}}},
        {{{"Equalize", 0.8, -1}, {"Equalize", 0.6, -1}}}}},
      {"cifar10",
       {{{{"Invert", 0.1, -1}, {"Contrast", 0.2, 6}}},          {{{"Rotate", 0.7, 2}, {"TranslateX", 0.3, 9}}},
        {{{"Sharpness", 0.8, 1}, {"Sharpness", 0.9, 3}}},       {{{"ShearY", 0.5, 8}, {"TranslateY", 0.7, 9}}},
        {{{"AutoContrast", 0.5, -1}, {"Equalize", 0.9, -1}}},   {{{"ShearY", 0.2, 7}, {"Posterize", 0.3, 7}}},
        {{{"Color", 0.4, 3}, {"Brightness", 0.6, 7}}},          {{{"Sharpness", 0.3, 9}, {"Brightness", 0.7, 9}}},
        {{{"Equalize", 0.6, -1}, {"Equalize", 0.5, -1}}},       {{{"Contrast", 0.6, 7}, {"Sharpness", 0.6, 5}}},
        {{{"Color", 0.7, 7}, {"TranslateX", 0.5, 8}}},          {{{"Equalize", 0.3, -1}, {"AutoContrast", 0.4, -1}}},
        {{{"TranslateY", 0.4, 3}, {"Sharpness", 0.2, 6}}},      {{{"Brightness", 0.9, 6}, {"Color", 0.2, 8}}},
        {{{"Solarize", 0.5, 2}, {"Invert", 0.0, -1}}},          {{{"Equalize", 0.2, -1}, {"AutoContrast", 0.6, -1}}},
        {{{"Equalize", 0.2, -1}, {"Equalize", 0.6, -1}}},       {{{"Color", 0.9, 9}, {"Equalize", 0.6, -1}}},
        {{{"AutoContrast", 0.8, -1}, {"Solarize", 0.2, 8}}},    {{{"Brightness", 0.1, 3}, {"Color", 0.7, 0}}},
        {{{"Solarize", 0.4, 5}, {"AutoContrast", 0.9, -1}}},    {{{"TranslateY", 0.9, 9}, {"TranslateY", 0.7, 9}}},
        {{{"AutoContrast", 0.9, -1}, {"Solarize", 0.8, 3}}},    {{{"Equalize", 0.8, -1}, {"Invert", 0.1, -1}}},
        {{{"TranslateY", 0.7, 9}, {"AutoContrast", 0.9, -1}}}}},
      {"svhn",
       {{{{"ShearX", 0.9, 4}, {"Invert", 0.2, -1}}},            {{{"ShearY", 0.9, 8}, {"Invert", 0.7, -1}}},
        {{{"Equalize", 0.6, -1}, {"Solarize", 0.6, 6}}},        {{{"Invert", 0.9, -1}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.6, -1}, {"Rotate", 0.9, 3}}},          {{{"ShearX", 0.9, 4}, {"AutoContrast", 0.8, -1}}},
        {{{"ShearY", 0.9, 8}, {"Invert", 0.4, -1}}},            {{{"ShearY", 0.9, 5}, {"Solarize", 0.2, 6}}},
        {{{"Invert", 0.9, -1}, {"AutoContrast", 0.8, -1}}},     {{{"Equalize", 0.6, -1}, {"Rotate", 0.9, 3}}},
        {{{"ShearX", 0.9, 4}, {"Solarize", 0.3, 3}}},           {{{"ShearY", 0.8, 8}, {"Invert", 0.7, -1}}},
        {{{"Equalize", 0.9, -1}, {"TranslateY", 0.6, 6}}},      {{{"Invert", 0.9, -1}, {"Equalize", 0.6, -1}}},
        {{{"Contrast", 0.3, 3}, {"Rotate", 0.8, 4}}},           {{{"Invert", 0.8, -1}, {"TranslateY", 0.0, 2}}},
        {{{"ShearY", 0.7, 6}, {"Solarize", 0.4, 8}}},           {{{"Invert", 0.6, -1}, {"Rotate", 0.8, 4}}},
        {{{"ShearY", 0.3, 7}, {"TranslateX", 0.9, 3}}},         {{{"ShearX", 0.1, 6}, {"Invert", 0.6, -1}}},
        {{{"Solarize", 0.7, 2}, {"TranslateY", 0.6, 7}}},       {{{"ShearY", 0.8, 4}, {"Invert", 0.8, -1}}},
        {{{"ShearX", 0.7, 9}, {"TranslateY", 0.8, 3}}},         {{{"ShearY", 0.8, 5}, {"AutoContrast", 0.7, -1}}},
        {{{"ShearX", 0.7, 2}, {"Invert", 0.1, -1}}}}}};
  return policies.at(name);
}

class AutoAugment : public Transform {
 public:
  AutoAugment(const std::string& policy, PolicyOptions o) : policy_(policy_named(policy)), o_(std::move(o)) {}
  // get_params: a sub-policy, two U[0, 1) probabilities, two signs; each step runs when its draw
  // is <= its probability, negated when its sign is 0.
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const SubPolicy& sub = policy_[size_t(draw_index(int64_t(policy_.size()), rng))];
    const double probs[2] = {uniform01(rng), uniform01(rng)};
    const int64_t signs[2] = {draw_index(2, rng), draw_index(2, rng)};
    at::Tensor img = x;
    for (int i = 0; i < 2; ++i) {
      const PolicyStep& step = sub[size_t(i)];
      if (!(probs[i] <= step.p)) continue;
      const OpSpace& op = op_space(step.op);
      double m = step.magnitude_bin >= 0 ? augment_magnitude(op.name, step.magnitude_bin, 10, img.size(0), img.size(1)) : 0.0;
      if (op.signed_magnitude && signs[i] == 0) m *= -1.0;
      img = apply_augment_op(img, op.name, m, o_.fill);
    }
    return img;
  }

 private:
  const std::vector<SubPolicy>& policy_;
  PolicyOptions o_;
};

// --- colour, greyscale, blur ----------------------------------------------------------------------

// ColorJitter: factors drawn from [lo, hi] (brightness, contrast, saturation around 1, hue around
// 0), applied in an order drawn as a permutation of the four; an unset one is skipped.
class ColorJitter : public Transform {
 public:
  using Range = std::optional<std::array<double, 2>>;
  ColorJitter(std::array<Range, 4> ranges) : ranges_(ranges) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    std::array<int, 4> order = {0, 1, 2, 3};
    for (int i = 3; i > 0; --i) std::swap(order[size_t(i)], order[size_t(draw_index(i + 1, rng))]);
    std::array<double, 4> factor{};
    for (size_t i = 0; i < 4; ++i)
      if (ranges_[i]) factor[i] = draw_uniform((*ranges_[i])[0], (*ranges_[i])[1], rng);
    at::Tensor img = x;
    for (int fn : order) {
      if (!ranges_[size_t(fn)]) continue;
      const double f = factor[size_t(fn)];
      img = fn == 0 ? pil::brightness(img, f) : fn == 1 ? pil::contrast(img, f) : fn == 2 ? pil::saturation(img, f) : pil::hue(img, f);
    }
    return img;
  }

 private:
  std::array<Range, 4> ranges_;
};

// transforms.Grayscale / RandomGrayscale: PIL's luma, repeated to `channels`.
at::Tensor grayscale(const at::Tensor& x, int64_t channels) {
  at::Tensor l = pil::luma(x);
  return channels == 1 ? l : l.expand({-1, -1, channels}).contiguous();
}

class Grayscale : public Transform {
 public:
  explicit Grayscale(int64_t channels) : channels_(channels) {}
  at::Tensor operator()(const at::Tensor& x, Rng&) const override { return grayscale(x, channels_); }

 private:
  int64_t channels_;
};

class RandomGrayscale : public Transform {
 public:
  explicit RandomGrayscale(double p) : p_(p) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    return uniform01(rng) < p_ ? grayscale(x, x.size(2)) : x;
  }

 private:
  double p_;
};

class GaussianBlur : public Transform {
 public:
  GaussianBlur(int64_t kw, int64_t kh, double sigma_lo, double sigma_hi) : kw_(kw), kh_(kh), lo_(sigma_lo), hi_(sigma_hi) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const double sigma = double(float(draw_uniform(lo_, hi_, rng)));  // torchvision's draw is a float32 .item()
    return gaussian_blur(x, kw_, kh_, sigma, sigma);
  }

 private:
  int64_t kw_, kh_;
  double lo_, hi_;
};

// --- geometry ---------------------------------------------------------------------------------------

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

// --- random erasing (float C x H x W, after to_tensor) --------------------------------------------

class RandomErasing : public Transform {
 public:
  RandomErasing(double p, std::array<double, 2> scale, std::array<double, 2> ratio, std::vector<double> value, bool random)
      : p_(p), scale_(scale), ratio_(ratio), value_(std::move(value)), random_(random) {}
  // get_params: up to 10 tries of area ~ U(scale) * H * W and log-ratio ~ U(log ratio); a box that
  // fits strictly inside is placed uniformly and filled (normal noise for `random`).
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    if (!x.is_floating_point() || x.dim() != 3)
      throw std::invalid_argument("random_erasing: needs a float C x H x W tensor; put it after to_tensor");
    if (!(uniform01(rng) < p_)) return x;
    const int64_t c = x.size(0), h = x.size(1), w = x.size(2);
    if (!value_.empty() && value_.size() != 1 && int64_t(value_.size()) != c)
      throw std::invalid_argument("random_erasing: " + std::to_string(value_.size()) + " values for an image with " +
                                  std::to_string(c) + " channels");
    const double area = double(h * w), lo = std::log(ratio_[0]), hi = std::log(ratio_[1]);
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double erase_area = area * draw_uniform(scale_[0], scale_[1], rng);
      const double aspect = std::exp(draw_uniform(lo, hi, rng));
      const int64_t eh = int64_t(std::nearbyint(std::sqrt(erase_area * aspect)));
      const int64_t ew = int64_t(std::nearbyint(std::sqrt(erase_area / aspect)));
      if (!(eh < h && ew < w)) continue;
      at::Tensor v;
      if (random_) {
        auto gen = at::make_generator<at::CPUGeneratorImpl>(rng());
        v = at::empty({c, eh, ew}, x.options()).normal_(0, 1, gen);
      } else {
        v = at::tensor(value_, x.options()).view({-1, 1, 1});
      }
      const int64_t top = draw_index(h - eh + 1, rng), left = draw_index(w - ew + 1, rng);
      at::Tensor out = x.clone();
      out.slice(1, top, top + eh).slice(2, left, left + ew).copy_(v.expand({c, eh, ew}));
      return out;
    }
    return x;
  }

 private:
  double p_;
  std::array<double, 2> scale_, ratio_;
  std::vector<double> value_;
  bool random_;
};

// --- recipe parsing ---------------------------------------------------------------------------------

// [lo, hi] with lo <= hi.
std::array<double, 2> ordered_pair(const Config& c, const std::string& key) {
  auto v = pair_of(c, key);
  return {v[0], v[1]};
}

// torchvision's _setup_angle / _check_input: one number d is [center - d, center + d] (d >= 0,
// clipped at `floor`), two are [min, max]; `bound` limits both ends.
std::optional<std::array<double, 2>> jitter_range(const Config& c, const std::string& key, double center, double floor,
                                                  std::optional<double> bound = std::nullopt) {
  auto v = numbers(c, key);
  std::array<double, 2> r;
  if (v.size() == 1) {
    if (v[0] < 0) throw std::invalid_argument(key + ": a single value must be >= 0");
    r = {std::max(floor, center - v[0]), center + v[0]};
  } else if (v.size() == 2 && v[0] <= v[1]) {
    r = {v[0], v[1]};
  } else {
    throw std::invalid_argument(key + ": expected one number or [min, max] with min <= max");
  }
  if (bound && (r[0] < -*bound || r[1] > *bound))
    throw std::invalid_argument(key + ": must lie within [" + std::to_string(-*bound) + ", " + std::to_string(*bound) + "]");
  if (r[0] < floor) throw std::invalid_argument(key + ": must be >= " + std::to_string(floor));
  if (r[0] == center && r[1] == center) return std::nullopt;
  return r;
}

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

Schema fill_param(Schema s) {
  s.add("fill", Type::FloatList, YAML::Node(), "value of pixels outside the image: one, or one per channel (null = 0)")
      .nullable().scalar_ok().range(0, 255);
  return s;
}

Schema policy_schema(Schema s) { return fill_param(std::move(s)); }

std::shared_ptr<Transform> make_rand_augment(const Config& c, const ModelInput&) {
  const auto bins = c.get<int64_t>("num_magnitude_bins"), m = c.get<int64_t>("magnitude");
  if (m >= bins) throw std::invalid_argument("magnitude: must be < num_magnitude_bins (" + std::to_string(bins) + ")");
  return std::make_shared<RandAugment>(c.get<int64_t>("num_ops"), m, bins, PolicyOptions{fill_of(c)});
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

// --- the ops ----------------------------------------------------------------------------------------

at::Tensor apply_augment_op(const at::Tensor& image, const std::string& op, double magnitude, const std::vector<double>& fill) {
  if (op == "ShearX" || op == "ShearY") {
    const std::array<double, 2> origin{0, 0};
    const double degrees = std::atan(magnitude) * kRadToDeg;
    return pil::affine(image, 0.0, {0, 0}, 1.0, op == "ShearX" ? std::array<double, 2>{degrees, 0.0} : std::array<double, 2>{0.0, degrees},
                       fill, &origin);
  }
  if (op == "TranslateX") return pil::affine(image, 0.0, {std::trunc(magnitude), 0}, 1.0, {0.0, 0.0}, fill);
  if (op == "TranslateY") return pil::affine(image, 0.0, {0, std::trunc(magnitude)}, 1.0, {0.0, 0.0}, fill);
  if (op == "Rotate") return pil::rotate(image, magnitude, fill);
  if (op == "Brightness") return pil::brightness(image, 1.0 + magnitude);
  if (op == "Color") return pil::saturation(image, 1.0 + magnitude);
  if (op == "Contrast") return pil::contrast(image, 1.0 + magnitude);
  if (op == "Sharpness") return pil::sharpness(image, 1.0 + magnitude);
  if (op == "Posterize") return pil::posterize(image, int(magnitude));
  if (op == "Solarize") return pil::solarize(image, magnitude);
  if (op == "AutoContrast") return pil::autocontrast(image);
  if (op == "Equalize") return pil::equalize(image);
  if (op == "Invert") return pil::invert(image);
  if (op == "Identity") return image;
  throw std::invalid_argument("unknown augment op '" + op + "'");
}

double augment_magnitude(const std::string& op, int64_t bin, int64_t num_bins, int64_t height, int64_t width, bool wide) {
  auto at_bin = [&](const at::Tensor& t) { return double(t[bin].item<float>()); };
  const double top = wide ? 0.99 : 0.9;
  if (op == "ShearX" || op == "ShearY") return at_bin(float_linspace(0.0, wide ? 0.99 : 0.3, num_bins));
  if (op == "TranslateX") return at_bin(float_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * double(width), num_bins));
  if (op == "TranslateY") return at_bin(float_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * double(height), num_bins));
  if (op == "Rotate") return at_bin(float_linspace(0.0, wide ? 135.0 : 30.0, num_bins));
  if (op == "Brightness" || op == "Color" || op == "Contrast" || op == "Sharpness")
    return at_bin(float_linspace(0.0, top, num_bins));
  if (op == "Posterize") {
    at::Tensor bins = 8 - (at::arange(num_bins) / (double(num_bins - 1) / (wide ? 6.0 : 4.0))).round().to(at::kInt);
    return double(bins[bin].item<int>());
  }
  if (op == "Solarize") return at_bin(float_linspace(255.0, 0.0, num_bins));
  throw std::invalid_argument("augment op '" + op + "' has no magnitudes");
}

at::Tensor gaussian_blur(const at::Tensor& image, int64_t kernel_w, int64_t kernel_h, double sigma_x, double sigma_y) {
  auto kernel1d = [](int64_t size, double sigma) {
    const double half = double(size - 1) * 0.5;
    at::Tensor x = float_linspace(-half, half, size);
    at::Tensor pdf = at::exp((x / sigma).pow(2) * -0.5);
    return pdf / pdf.sum();
  };
  at::Tensor kx = kernel1d(kernel_w, sigma_x), ky = kernel1d(kernel_h, sigma_y);
  at::Tensor kernel = at::mm(ky.unsqueeze(1), kx.unsqueeze(0));
  const int64_t c = image.size(2);
  at::Tensor img = image.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat);
  img = at::reflection_pad2d(img, {kernel_w / 2, kernel_w / 2, kernel_h / 2, kernel_h / 2});
  const std::vector<int64_t> ones{1, 1}, zeros{0, 0};
  img = at::conv2d(img, kernel.expand({c, 1, kernel_h, kernel_w}), c10::optional<at::Tensor>(), ones, zeros, ones, c);
  return img.squeeze(0).round().to(at::kByte).permute({1, 2, 0}).contiguous();
}

// --- registrations ------------------------------------------------------------------------------------

TRAINRUN_REGISTER(Transform, "rand_augment",
                  "num_ops random ops of RandAugment at one magnitude (torchvision RandAugment, NEAREST; before to_tensor)",
                  policy_schema(Schema()
                                    .add("num_ops", Type::Int, yaml("2"), "ops applied in sequence").min(0)
                                    .add("magnitude", Type::Int, yaml("9"), "magnitude bin, < num_magnitude_bins").min(0)
                                    .add("num_magnitude_bins", Type::Int, yaml("31"), "number of magnitude bins").min(2)),
                  make_rand_augment);

TRAINRUN_REGISTER(Transform, "trivial_augment_wide",
                  "one random op at a random magnitude (torchvision TrivialAugmentWide, NEAREST; before to_tensor)",
                  policy_schema(Schema().add("num_magnitude_bins", Type::Int, yaml("31"), "number of magnitude bins").min(2)),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<TrivialAugmentWide>(c.get<int64_t>("num_magnitude_bins"), PolicyOptions{fill_of(c)});
                  });

TRAINRUN_REGISTER(Transform, "auto_augment", "a random sub-policy of AutoAugment (torchvision AutoAugment, NEAREST; before to_tensor)",
                  policy_schema(Schema().add("policy", Type::String, yaml("imagenet"), "the learned policy")
                                    .choices({"imagenet", "cifar10", "svhn"})),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<AutoAugment>(c.get<std::string>("policy"), PolicyOptions{fill_of(c)});
                  });

TRAINRUN_REGISTER(Transform, "color_jitter",
                  "random brightness, contrast, saturation and hue in a random order (torchvision ColorJitter on PIL)",
                  Schema()
                      .add("brightness", Type::FloatList, yaml("0"), "b = factor in [max(0, 1 - b), 1 + b], or [min, max]")
                      .scalar_ok().min(0)
                      .add("contrast", Type::FloatList, yaml("0"), "c = factor in [max(0, 1 - c), 1 + c], or [min, max]")
                      .scalar_ok().min(0)
                      .add("saturation", Type::FloatList, yaml("0"), "s = factor in [max(0, 1 - s), 1 + s], or [min, max]")
                      .scalar_ok().min(0)
                      .add("hue", Type::FloatList, yaml("0"), "h = shift in [-h, h] of the hue circle, or [min, max]")
                      .scalar_ok().range(-0.5, 0.5),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<ColorJitter>(std::array<ColorJitter::Range, 4>{
                        jitter_range(c, "brightness", 1, 0), jitter_range(c, "contrast", 1, 0),
                        jitter_range(c, "saturation", 1, 0), jitter_range(c, "hue", 0, -0.5, 0.5)});
                  });

TRAINRUN_REGISTER(Transform, "grayscale", "PIL's luma (ITU-R 601-2), as 1 or 3 channels (torchvision Grayscale)",
                  Schema().add("num_output_channels", Type::Int, yaml("1"), "1 or 3").range(1, 3),
                  [](const Config& c, const ModelInput&) {
                    const auto n = c.get<int64_t>("num_output_channels");
                    if (n == 2) throw std::invalid_argument("num_output_channels: must be 1 or 3");
                    return std::make_shared<Grayscale>(n);
                  });

TRAINRUN_REGISTER(Transform, "random_grayscale", "greyscale with probability p, keeping the channel count (torchvision RandomGrayscale)",
                  Schema().add("p", Type::Float, yaml("0.1"), "probability").range(0, 1),
                  [](const Config& c, const ModelInput&) { return std::make_shared<RandomGrayscale>(c.get<double>("p")); });

TRAINRUN_REGISTER(Transform, "gaussian_blur", "Gaussian blur with sigma drawn from [min, max] (torchvision GaussianBlur)",
                  Schema()
                      .required("kernel_size", Type::IntList, "odd size, or [width, height]").scalar_ok().min(1)
                      .add("sigma", Type::FloatList, yaml("[0.1, 2.0]"), "sigma, or [min, max] to draw from").scalar_ok().above(0),
                  [](const Config& c, const ModelInput&) {
                    auto k = c.node()["kernel_size"].IsScalar() ? std::vector<int64_t>(2, c.get<int64_t>("kernel_size"))
                                                                : c.get<std::vector<int64_t>>("kernel_size");
                    if (k.size() != 2 || k[0] % 2 == 0 || k[1] % 2 == 0)
                      throw std::invalid_argument("kernel_size: expected odd numbers, one or [width, height]");
                    auto s = numbers(c, "sigma");
                    if (s.size() == 1) s.push_back(s[0]);
                    if (s.size() != 2 || s[0] > s[1]) throw std::invalid_argument("sigma: expected one number or [min, max]");
                    return std::make_shared<GaussianBlur>(k[0], k[1], s[0], s[1]);
                  });

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

TRAINRUN_REGISTER(Transform, "random_erasing",
                  "erase a random box with probability p (torchvision RandomErasing; after to_tensor/normalize)",
                  Schema()
                      .add("p", Type::Float, yaml("0.5"), "probability").range(0, 1)
                      .add("scale", Type::FloatList, yaml("[0.02, 0.33]"), "[min, max] share of the image area").range(0, 1)
                      .add("ratio", Type::FloatList, yaml("[0.3, 3.3]"), "[min, max] aspect ratio h/w").above(0)
                      .add("value", Type::FloatList, yaml("0"), "fill: one value, one per channel, or `random` (normal noise)")
                      .scalar_ok().choices({"random"}),
                  [](const Config& c, const ModelInput&) {
                    const bool random = c.is_word("value", "random");
                    return std::make_shared<RandomErasing>(c.get<double>("p"), ordered_pair(c, "scale"), ordered_pair(c, "ratio"),
                                                           random ? std::vector<double>{} : numbers(c, "value"), random);
                  });

}  // namespace trainrun
