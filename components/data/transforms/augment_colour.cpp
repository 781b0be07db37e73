// The colour augmentations as registered transforms: color_jitter, grayscale, random_grayscale and
// gaussian_blur (torchvision's ColorJitter, Grayscale, RandomGrayscale and GaussianBlur on PIL
// images), with their draws from the loader's per-example generator.
#include "components/data/pil/pil_ops.h"
#include "components/data/transforms/augment.h"
#include "components/data/transforms/augment_common.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <stdexcept>

namespace trainrun {
namespace {

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

}  // namespace

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

}  // namespace trainrun
