// sgd, adam, adamw, rmsprop: torch::optim's own implementations, configured from the recipe with
// torch.optim's defaults and parameter names.
#include "components/optim/custom_optimizer.h"
#include "components/optim/optim.h"
#include "components/optim/param_groups.h"

#include <torch/optim.h>

namespace trainrun {

double current_lr(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

namespace {

// The options' momentum (SGD, RMSprop) or beta1 (Adam, AdamW and the Beta1Option ones: radam,
// nadam, lion, lamb): what torch's OneCycleLR cycles, found as it looks for `momentum` or `betas`
// in the optimizer's defaults. nullptr if neither.
double* momentum_of(torch::optim::OptimizerOptions& o) {
  using namespace torch::optim;
  if (auto* sgd = dynamic_cast<SGDOptions*>(&o)) return &sgd->momentum();
  if (auto* rms = dynamic_cast<RMSpropOptions*>(&o)) return &rms->momentum();
  if (auto* adam = dynamic_cast<AdamOptions*>(&o)) return &std::get<0>(adam->betas());
  if (auto* adamw = dynamic_cast<AdamWOptions*>(&o)) return &std::get<0>(adamw->betas());
  if (auto* other = dynamic_cast<Beta1Option*>(&o)) return &other->beta1();
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

Schema adam_schema(const char* weight_decay) {
  return optimizer_schema("1e-3", weight_decay)
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
                  optimizer_schema("0.01", "0.0")
                      .add("momentum", Type::Float, yaml("0.0"), "momentum factor").min(0)
                      .add("dampening", Type::Float, yaml("0.0"), "dampening for momentum").min(0)
                      .add("nesterov", Type::Bool, yaml("false"), "Nesterov momentum"),
                  [](const Config& c, const ParamGroups& groups) {
                    auto o = torch::optim::SGDOptions(c.get<double>("lr"))
                                 .momentum(c.get<double>("momentum"))
                                 .dampening(c.get<double>("dampening"))
                                 .nesterov(c.get<bool>("nesterov"))
                                 .weight_decay(c.get<double>("weight_decay"));
                    if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
                      throw std::invalid_argument(c.path() + ".nesterov: needs momentum > 0 and dampening 0");
                    return make_optimizer<torch::optim::SGD>(groups, o);
                  });

TRAINRUN_REGISTER(torch::optim::Optimizer, "adam", "Adam (torch.optim.Adam; weight_decay is L2)", adam_schema("0.0"),
                  [](const Config& c, const ParamGroups& groups) {
                    return make_optimizer<torch::optim::Adam>(groups, adam_options<torch::optim::AdamOptions>(c));
                  });

TRAINRUN_REGISTER(torch::optim::Optimizer, "adamw", "AdamW (torch.optim.AdamW; decoupled weight decay)",
                  adam_schema("0.01"), [](const Config& c, const ParamGroups& groups) {
                    return make_optimizer<torch::optim::AdamW>(groups, adam_options<torch::optim::AdamWOptions>(c));
                  });

TRAINRUN_REGISTER(torch::optim::Optimizer, "rmsprop", "RMSprop (torch.optim.RMSprop; weight_decay is L2)",
                  optimizer_schema("0.01", "0.0")
                      .add("alpha", Type::Float, yaml("0.99"), "smoothing constant of the squared-gradient average").range(0, 1)
                      .add("eps", Type::Float, yaml("1e-8"), "term added to the denominator").above(0)
                      .add("momentum", Type::Float, yaml("0.0"), "momentum factor").min(0)
                      .add("centered", Type::Bool, yaml("false"), "normalise by the gradient's estimated variance"),
                  [](const Config& c, const ParamGroups& groups) {
                    return make_optimizer<torch::optim::RMSprop>(groups, torch::optim::RMSpropOptions(c.get<double>("lr"))
                                                                             .alpha(c.get<double>("alpha"))
                                                                             .eps(c.get<double>("eps"))
                                                                             .weight_decay(c.get<double>("weight_decay"))
                                                                             .momentum(c.get<double>("momentum"))
                                                                             .centered(c.get<bool>("centered")));
                  });

}  // namespace trainrun
