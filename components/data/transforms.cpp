// torchvision.transforms semantics: ToTensor (HWC uint8 -> CHW float in [0,1]) and Normalize.
#include "components/data/transform.h"

#include <ATen/ATen.h>

namespace trainrun {
namespace {

class ToTensor : public Transform {
 public:
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    if (x.scalar_type() != at::kByte) return x;  // already a float tensor, as torchvision allows
    return x.permute({2, 0, 1}).to(at::kFloat).div_(255.0);
  }
};

class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std) {
    mean_ = at::tensor(mean, at::kFloat).view({-1, 1, 1});
    std_ = at::tensor(std, at::kFloat).view({-1, 1, 1});
  }
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    if (x.scalar_type() != at::kFloat)
      throw std::invalid_argument("normalize: needs a float tensor; put to_tensor before it");
    if (mean_.size(0) != 1 && mean_.size(0) != x.size(0))
      throw std::invalid_argument("normalize: " + std::to_string(mean_.size(0)) + " means for an image with " +
                                  std::to_string(x.size(0)) + " channels");
    return (x - mean_) / std_;
  }

 private:
  at::Tensor mean_, std_;
};

std::vector<double> numbers(const Config& c, const std::string& key) {
  auto n = c.node()[key];
  if (n.IsScalar()) return {n.as<double>()};
  return n.as<std::vector<double>>();
}

}  // namespace

TRAINRUN_REGISTER(Transform, "to_tensor", "HWC uint8 image -> CHW float in [0, 1] (torchvision ToTensor)",
                  Schema(), [](const Config&) { return std::make_shared<ToTensor>(); });

TRAINRUN_REGISTER(Transform, "normalize",
                  "(x - mean) / std per channel (torchvision Normalize); `model` takes the model's values",
                  Schema()
                      .add("mean", Type::FloatList, yaml("model"), "per-channel means, or `model`")
                      .choices({"model"}).scalar_ok()
                      .add("std", Type::FloatList, yaml("model"), "per-channel stds, or `model`")
                      .choices({"model"}).scalar_ok().above(0),
                  [](const Config& c) { return std::make_shared<Normalize>(numbers(c, "mean"), numbers(c, "std")); });

}  // namespace trainrun
