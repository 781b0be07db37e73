// For optimizers LibTorch lacks (radam, nadam: torch.optim's; lion, lamb: timm's): the pieces a
// torch::optim::Optimizer subclass needs, written the way LibTorch's own (adamw.h) are, so that
// optimizer->save()/load() write and read optimizer.pt like theirs and make_optimizer builds them.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace trainrun {

// Options with Adam-style betas: what torch's OneCycleLR cycles (it looks for `betas` in the
// optimizer's defaults), so set_momentum/current_momentum cycle beta1 of every such optimizer.
struct Beta1Option {
  using betas_t = std::tuple<double, double>;
  virtual ~Beta1Option() = default;
  virtual double& beta1() = 0;
};

// A parameter's key in Optimizer::state(): LibTorch 1.13 keys by the TensorImpl address printed
// as a string, 2.x by the address itself (void*). Picked from the map's own key type, so no
// version number is needed.
template <class StateMap>
typename StateMap::key_type param_state_key(const at::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;  // what c10::guts::to_string(p.unsafeGetTensorImpl()) gives
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// An Optimizer whose per-parameter state is `State` and whose group options are `Options`,
// saved and loaded with LibTorch's own serialization (the archive layout of torch::optim::Adam).
template <class State, class Options>
class CustomOptimizer : public torch::optim::Optimizer {
 public:
  CustomOptimizer(std::vector<torch::optim::OptimizerParamGroup> groups, const Options& defaults)
      : Optimizer(std::move(groups), std::make_unique<Options>(defaults)) {}

  void save(torch::serialize::OutputArchive& archive) const override {
    torch::optim::serialize<State, Options>(archive, *this);
  }
  void load(torch::serialize::InputArchive& archive) override {
    torch::optim::serialize<State, Options>(archive, *this);
  }

 protected:
  // The parameter's state; nullptr before its first update.
  State* find_state(const at::Tensor& p) {
    auto it = state_.find(param_state_key<decltype(state_)>(p));
    return it == state_.end() ? nullptr : static_cast<State*>(it->second.get());
  }
  State& new_state(const at::Tensor& p, State s) {
    auto& slot = state_[param_state_key<decltype(state_)>(p)];
    slot = std::make_unique<State>(std::move(s));
    return static_cast<State&>(*slot);
  }
  static Options& options_of(torch::optim::OptimizerParamGroup& g) { return static_cast<Options&>(g.options()); }
};

}  // namespace trainrun

