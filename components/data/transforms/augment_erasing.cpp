// random_erasing (torchvision's RandomErasing) as a registered transform: on the float C x H x W
// tensor after to_tensor, with its draws from the loader's per-example generator.
#include "components/data/transforms/augment_common.h"

#include <ATen/CPUGeneratorImpl.h>

#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace trainrun {
namespace {

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

}  // namespace

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
