// sgd, adam, adamw: torch::optim's own implementations, configured from the recipe with
// torch.optim's defaults and parameter names.
#include "components/optim/optim.h"

#include <torch/optim.h>

#include <fnmatch.h>

namespace trainrun {

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> split_no_decay(
    const NamedParameters& params, const std::vector<std::string>& patterns) {
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& [name, p] : params) {
    bool skip = false;
    for (const auto& pat : patterns) {
      if (pat == "bias") skip |= name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
      else if (pat == "norm") skip |= p.dim() <= 1 && !(name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0);
      else skip |= fnmatch(pat.c_str(), name.c_str(), 0) == 0;
    }
    (skip ? no_decay : decay).push_back(p);
  }
  return {decay, no_decay};
}

double current_lr(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

namespace {

// The options' momentum (SGD, RMSprop) or beta1 (Adam, AdamW): what torch's OneCycleLR cycles,
// found as it looks for `momentum` or `betas` in the optimizer's defaults. nullptr if neither.
double* momentum_of(torch::optim::OptimizerOptions& o) {
  using namespace torch::optim;
  if (auto* sgd = dynamic_cast<SGDOptions*>(&o)) return &sgd->momentum();
  if (auto* rms = dynamic_cast<RMSpropOptions*>(&o)) return &rms->momentum();
  if (auto* adam = dynamic_cast<AdamOptions*>(&o)) return &std::get<0>(adam->betas());
  if (auto* adamw = dynamic_cast<AdamWOptions*>(&o)) return &std::get<0>(adamw->betas());
  return nullptr;
}

}  // namespace

std::optional<double> current_momentum(const torch::optim::Optimizer& optimizer) {
  // Only read through the pointer; the lookup is shared with set_momentum.
  auto& options = const_cast<torch::optim::OptimizerOptions&>(optimizer.param_groups().at(0).options());
  const double* m = momentum_of(options);
  return m ? std::optional<double>(*m) : std::nullopt;
}

bool set_momentum(torch::optim::Optimizer& optimizer, double value) {
  for (auto& group : optimizer.param_groups()) {
    double* m = momentum_of(group.options());
    if (!m) return false;
    *m = value;
  }
  return true;
}

namespace {

// Builds the groups (decayed, zero-decay) with `Options` cloned from the recipe's settings.
template <class Optim, class Options>
std::shared_ptr<torch::optim::Optimizer> make(const Config& c, const NamedParameters& params, Options options) {
  auto [decay, no_decay] = split_no_decay(params, c.get<std::vector<std::string>>("no_decay"));
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, std::make_unique<Options>(options));
  if (!no_decay.empty()) {
    auto zero = std::make_unique<Options>(options);
    zero->weight_decay(0.0);
    groups.emplace_back(no_decay, std::move(zero));
  }
  return std::make_shared<Optim>(groups, options);
}

Schema common(const char* lr, const char* weight_decay) {
  return Schema()
      .add("lr", Type::Float, yaml(lr), "learning rate").above(0)
      .add("weight_decay", Type::Float, yaml(weight_decay), "weight decay (L2 for sgd/adam, decoupled for adamw)").min(0)
      .add("no_decay", Type::StringList, yaml("[]"),
           "parameters with zero weight decay: `bias`, `norm` (1-D weights) or globs");
}

Schema adam_schema(const char* weight_decay) {
  return common("1e-3", weight_decay)
      .add("betas", Type::FloatList, yaml("[0.9, 0.999]"), "(beta1, beta2)").range(0, 1)
      .add("eps", Type::Float, yaml("1e-8"), "term added to the denominator").above(0)
      .add("amsgrad", Type::Bool, yaml("false"), "use the AMSGrad variant");
}

template <class Options>
Options adam_options(const Config& c) {
  auto betas = c.get<std::vector<double>>("betas");
  if (betas.size() != 2) throw std::invalid_argument(c.path() + ".betas: needs two values (beta1, beta2)");
  return Options(c.get<double>("lr"))
      .betas({betas[0], betas[1]})
      .eps(c.get<double>("eps"))
      .weight_decay(c.get<double>("weight_decay"))
      .amsgrad(c.get<bool>("amsgrad"));
}

}  // namespace

TRAINRUN_REGISTER(torch::optim::Optimizer, "sgd", "stochastic gradient descent (torch.optim.SGD)",
                  common("0.01", "0.0")
                      .add("momentum", Type::Float, yaml("0.0"), "momentum factor").min(0)
                      .add("dampening", Type::Float, yaml("0.0"), "dampening for momentum").min(0)
                      .add("nesterov", Type::Bool, yaml("false"), "Nesterov momentum"),
                  [](const Config& c, const NamedParameters& params) {
                    auto o = torch::optim::SGDOptions(c.get<double>("lr"))
                                 .momentum(c.get<double>("momentum"))
                                 .dampening(c.get<double>("dampening"))
                                 .nesterov(c.get<bool>("nesterov"))
                                 .weight_decay(c.get<double>("weight_decay"));
                    if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
                      throw std::invalid_argument(c.path() + ".nesterov: needs momentum > 0 and dampening 0");
                    return make<torch::optim::SGD>(c, params, o);
                  });

TRAINRUN_REGISTER(torch::optim::Optimizer, "adam", "Adam (torch.optim.Adam; weight_decay is L2)", adam_schema("0.0"),
                  [](const Config& c, const NamedParameters& params) {
                    return make<torch::optim::Adam>(c, params, adam_options<torch::optim::AdamOptions>(c));
                  });

TRAINRUN_REGISTER(torch::optim::Optimizer, "adamw", "AdamW (torch.optim.AdamW; decoupled weight decay)",
                  adam_schema("0.01"), [](const Config& c, const NamedParameters& params) {
                    return make<torch::optim::AdamW>(c, params, adam_options<torch::optim::AdamWOptions>(c));
                  });

}  // namespace trainrun
