// Debian's libtorch-dev ships c10d/reducer.hpp, which includes this header, but not the header
// itself (it belongs to distributed autograd / RPC, which trainrun does not use). reducer.hpp
// only needs two names from it, declared here exactly as PyTorch 1.13 declares them so the
// Reducer's layout is unchanged: DistAutogradContext::GradCallback and ContextPtr.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
