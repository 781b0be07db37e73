// A per-example transform with torchvision's semantics. Random transforms draw from the
// generator they are handed, which the loader seeds from (seed, epoch, example index), so a
// batch is the same whatever the number of workers.
#pragma once

#include "components/data/image.h"
#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace trainrun {

using Rng = std::mt19937_64;

class Transform {
 public:
  virtual ~Transform() = default;
  // uint8 HWC image before `to_tensor`, float CHW tensor after it.
  virtual at::Tensor operator()(const at::Tensor& x, Rng& rng) const = 0;
  // One transform doing this one's work and then `next`'s in a single pass (same numbers), or
  // null. Compose asks, so to_tensor + normalize touch each pixel once.
  virtual std::shared_ptr<Transform> fuse(const Transform& next) const { return nullptr; }
  // For a transform that starts by cropping a box drawn from `rng` (random_resized_crop): true,
  // and then operator()(x, rng) == after_crop(x cropped to crop_box(H, W, rng), rng) with the same
  // draws. The loader uses it to decode only the box of a JPEG.
  virtual bool crops_first() const { return false; }
  virtual CropBox crop_box(int64_t height, int64_t width, Rng& rng) const { return {0, 0, height, width}; }
  virtual at::Tensor after_crop(const at::Tensor& cropped, Rng& rng) const { return cropped; }
  // operator()(x, rng), written into `out` when this transform can and its result has out's
  // shape: then `out` is returned; otherwise a new tensor. The loader hands the last transform
  // each example's slice of the batch, which saves stacking a copy.
  virtual at::Tensor apply_into(const at::Tensor& x, Rng& rng, const at::Tensor& out) const { return (*this)(x, rng); }
};

// What the model says about its inputs (its InputConfig: components/models, which data/ does not
// include), handed to every transform's factory: a parameter written `model` takes the model's
// value, as timm's resolve_data_config (normalize's `mean: model`).
struct ModelInput {
  std::vector<double> mean;
  std::vector<double> std;
};

template <>
struct Kind<Transform> {
  static constexpr const char* name = "transforms";
  static constexpr const char* singular = "transform";  // in messages: "unknown transform 'x'"
  using Factory = std::function<std::shared_ptr<Transform>(const Config&, const ModelInput&)>;
};

class Compose {
 public:
  Compose() = default;
  explicit Compose(std::vector<std::shared_ptr<Transform>> steps) {
    for (auto& t : steps) {
      std::shared_ptr<Transform> fused = steps_.empty() ? nullptr : steps_.back()->fuse(*t);
      if (fused)
        steps_.back() = std::move(fused);
      else
        steps_.push_back(std::move(t));
    }
  }
  at::Tensor operator()(at::Tensor x, Rng& rng) const { return from(0, std::move(x), rng); }
  bool empty() const { return steps_.empty(); }
  // The first step, or null; and the steps from `first` on, the last one writing into `out` if
  // it can (Transform::apply_into).
  const Transform* front() const { return steps_.empty() ? nullptr : steps_.front().get(); }
  at::Tensor from(std::size_t first, at::Tensor x, Rng& rng, const at::Tensor& out = {}) const {
    for (std::size_t i = first; i < steps_.size(); ++i)
      x = i + 1 == steps_.size() && out.defined() ? steps_[i]->apply_into(x, rng, out) : (*steps_[i])(x, rng);
    return x;
  }

 private:
  std::vector<std::shared_ptr<Transform>> steps_;
};

// torchvision's geometry (CropBox is in image.h), shared by the transforms and exposed for the tests.

// RandomResizedCrop.get_params: 10 tries of area ~ U(scale) * H * W and log-ratio ~
// U(log ratio), a box that fits placed uniformly; else the centre crop clamped to `ratio`.
CropBox random_resized_crop_box(int64_t height, int64_t width, const std::vector<double>& scale,
                                const std::vector<double>& ratio, Rng& rng);

// Crops `box` out of a uint8 H x W x C image and resizes it to height x width (resized_crop).
at::Tensor resized_crop(const at::Tensor& image, const CropBox& box, int64_t height, int64_t width);

// A double in [0, 1) from 53 random bits: the same stream on every platform (unlike
// std::uniform_real_distribution, whose algorithm is the library's choice).
inline double uniform01(Rng& rng) { return double(rng() >> 11) * 0x1.0p-53; }

}  // namespace trainrun
