// A per-example transform with torchvision's semantics. Random transforms draw from the
// generator they are handed, which the loader seeds from (seed, epoch, example index), so a
// batch is the same whatever the number of workers.
#pragma once

#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <random>
#include <vector>

namespace trainrun {

using Rng = std::mt19937_64;

class Transform {
 public:
  virtual ~Transform() = default;
  // uint8 HWC image before `to_tensor`, float CHW tensor after it.
  virtual at::Tensor operator()(const at::Tensor& x, Rng& rng) const = 0;
};

template <>
struct Kind<Transform> {
  static constexpr const char* name = "transforms";
  using Factory = std::function<std::shared_ptr<Transform>(const Config&)>;
};

class Compose {
 public:
  Compose() = default;
  explicit Compose(std::vector<std::shared_ptr<Transform>> steps) : steps_(std::move(steps)) {}
  at::Tensor operator()(at::Tensor x, Rng& rng) const {
    for (auto& t : steps_) x = (*t)(x, rng);
    return x;
  }
  bool empty() const { return steps_.empty(); }

 private:
  std::vector<std::shared_ptr<Transform>> steps_;
};

}  // namespace trainrun
