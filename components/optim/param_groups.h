// For optimizer components: one torch param group per planned ParamGroup, each with the
// optimizer's options at lr * lr_scale and the group's weight decay. An Options type needs
// torch's `lr` and `weight_decay` accessors (TORCH_ARG), as torch::optim's own have.
#pragma once

#include "components/optim/optim.h"

#include <torch/optim/optimizer.h>

#include <memory>
#include <utility>
#include <vector>

namespace trainrun {

template <class Optim, class Options>
std::shared_ptr<torch::optim::Optimizer> make_optimizer(const ParamGroups& plan, const Options& options) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const ParamGroup& g : plan) {
    auto o = std::make_unique<Options>(options);
    o->lr(options.lr() * g.lr_scale);  // x 1.0 is exact: no group moves when nothing is scaled
    if (g.weight_decay) o->weight_decay(*g.weight_decay);
    std::vector<at::Tensor> params;
    for (const auto& [name, p] : g.params) params.push_back(p);
    groups.emplace_back(std::move(params), std::move(o));
  }
  return std::make_shared<Optim>(std::move(groups), options);
}

}  // namespace trainrun
