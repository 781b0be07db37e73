// radam, nadam: torch.optim.RAdam and torch.optim.NAdam, which LibTorch lacks, written as
// torch::optim optimizers (save/load like Adam's). The update is torch.optim's single-tensor path
// (foreach=False), op for op:
// - RAdam (Liu et al. 2019, "On the Variance of the Adaptive Learning Rate and Beyond"):
//   torch/optim/radam.py::_single_tensor_radam, the same in 1.13 and 2.6 with their defaults
//   (2.x's decoupled_weight_decay=False is 1.13's L2 decay).
// - NAdam (Dozat 2016, with momentum_decay's mu schedule): torch/optim/nadam.py::
//   _single_tensor_nadam as of torch 2.0 (pytorch#92699, kept through 2.6): mu_product_next =
//   mu_product * mu_next. 1.13 multiplies by mu once more there (the bug that PR fixed); trainrun
//   gives 2.x's numbers, and its test checks them against 2.x's formula where torch is 1.13.
//   mu_product is a float32 scalar tensor as in torch, so its rounding is torch's.
// 2.x's extra flags (decoupled_weight_decay, maximize, capturable, differentiable) are not
// offered: torch 1.13's RAdam/NAdam, the reference Debian 12 has, cannot check them.
#include "components/optim/custom_optimizer.h"
#include "components/optim/optim.h"
#include "components/optim/param_groups.h"

#include <torch/torch.h>

#include <cmath>

namespace trainrun {
namespace {

struct RAdamOptions : torch::optim::OptimizerCloneableOptions<RAdamOptions>, Beta1Option {
  RAdamOptions(double lr = 1e-3) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  double& beta1() override { return std::get<0>(betas_); }
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  }
};

struct NAdamOptions : torch::optim::OptimizerCloneableOptions<NAdamOptions>, Beta1Option {
  NAdamOptions(double lr = 2e-3) : lr_(lr) {}
  TORCH_ARG(double, lr) = 2e-3;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, momentum_decay) = 4e-3;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  double& beta1() override { return std::get<0>(betas_); }
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_decay);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum_decay);
  }
};

// exp_avg, exp_avg_sq and step, as torch's state; NAdam adds mu_product (float32, 0-dim).
struct AdamVariantState : torch::optim::OptimizerCloneableParamState<AdamVariantState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);
  TORCH_ARG(torch::Tensor, mu_product) = {};

 public:
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(mu_product);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, mu_product);
  }
};

AdamVariantState fresh_adam_state(const at::Tensor& p, bool nadam) {
  AdamVariantState s;
  s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
  s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
  if (nadam) s.mu_product(torch::ones({}, torch::kFloat32));  // torch: _get_scalar_dtype()
  return s;
}

class RAdam : public CustomOptimizer<AdamVariantState, RAdamOptions> {
 public:
  using CustomOptimizer::CustomOptimizer;

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss = closure ? closure() : torch::Tensor();
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      const RAdamOptions& o = options_of(group);
      const auto [beta1, beta2] = o.betas();
      const double lr = o.lr(), wd = o.weight_decay(), eps = o.eps();
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        AdamVariantState* s = find_state(p);
        if (!s) s = &new_state(p, fresh_adam_state(p, false));
        s->step(s->step() + 1);
        const double step = double(s->step());
        const double bias_correction1 = 1 - std::pow(beta1, step);
        const double bias_correction2 = 1 - std::pow(beta2, step);
        torch::Tensor grad = wd != 0 ? p.grad().add(p, wd) : p.grad();
        s->exp_avg().mul_(beta1).add_(grad, 1 - beta1);
        s->exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        torch::Tensor corrected = s->exp_avg() / bias_correction1;
        // The length of the approximated SMA, and its limit: rectify once it passes 5.
        const double rho_inf = 2 / (1 - beta2) - 1;
        const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
        if (rho_t > 5.) {
          const double rect =
              std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
          // Python's `scalar / tensor` is tensor.reciprocal() * scalar.
          torch::Tensor adaptive_lr = s->exp_avg_sq().sqrt().add_(eps).reciprocal() * std::sqrt(bias_correction2);
          p.add_(corrected * lr * adaptive_lr * rect, -1.0);
        } else {
          p.add_(corrected * lr, -1.0);
        }
      }
    }
    return loss;
  }
};

class NAdam : public CustomOptimizer<AdamVariantState, NAdamOptions> {
 public:
  using CustomOptimizer::CustomOptimizer;

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss = closure ? closure() : torch::Tensor();
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      const NAdamOptions& o = options_of(group);
      const auto [beta1, beta2] = o.betas();
      const double lr = o.lr(), wd = o.weight_decay(), eps = o.eps(), momentum_decay = o.momentum_decay();
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        AdamVariantState* s = find_state(p);
        if (!s) s = &new_state(p, fresh_adam_state(p, true));
        s->step(s->step() + 1);
        const double step = double(s->step());
        const double bias_correction2 = 1 - std::pow(beta2, step);
        torch::Tensor grad = wd != 0 ? p.grad().add(p, wd) : p.grad();
        // The momentum cache mu_t and mu_{t+1}.
        const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * momentum_decay));
        const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * momentum_decay));
        s->mu_product().mul_(mu);
        s->exp_avg().lerp_(grad, 1 - beta1);
        s->exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        torch::Tensor denom = s->exp_avg_sq().div(bias_correction2).sqrt().add_(eps);
        const double mu_product = s->mu_product().item<double>();
        const double mu_product_next = mu_product * mu_next;
        p.addcdiv_(grad, denom, -lr * (1. - mu) / (1. - mu_product));
        p.addcdiv_(s->exp_avg(), denom, (-lr * mu_next) / (1. - mu_product_next));
      }
    }
    return loss;
  }
};

Schema adam_variant_schema(const char* lr) {
  return optimizer_schema(lr, "0.0")
      .add("betas", Type::FloatList, yaml("[0.9, 0.999]"), "(beta1, beta2)").min(0).below(1)
      .add("eps", Type::Float, yaml("1e-8"), "term added to the denominator").above(0);
}

template <class Options>
Options adam_variant_options(const Config& c) {
  auto betas = c.get<std::vector<double>>("betas");
  if (betas.size() != 2) throw std::invalid_argument(c.path() + ".betas: needs two values (beta1, beta2)");
  return Options(c.get<double>("lr"))
      .betas({betas[0], betas[1]})
      .eps(c.get<double>("eps"))
      .weight_decay(c.get<double>("weight_decay"));
}

std::shared_ptr<torch::optim::Optimizer> make_radam(const Config& c, const ParamGroups& groups) {
  return make_optimizer<RAdam>(groups, adam_variant_options<RAdamOptions>(c));
}

std::shared_ptr<torch::optim::Optimizer> make_nadam(const Config& c, const ParamGroups& groups) {
  return make_optimizer<NAdam>(groups, adam_variant_options<NAdamOptions>(c).momentum_decay(c.get<double>("momentum_decay")));
}

}  // namespace

TRAINRUN_REGISTER(torch::optim::Optimizer, "radam", "RAdam, rectified Adam (torch.optim.RAdam; weight_decay is L2)",
                  adam_variant_schema("1e-3"), make_radam);

TRAINRUN_REGISTER(torch::optim::Optimizer, "nadam", "NAdam, Adam with Nesterov momentum (torch.optim.NAdam; weight_decay is L2)",
                  adam_variant_schema("2e-3")
                      .add("momentum_decay", Type::Float, yaml("4e-3"), "the mu schedule's decay (psi)").min(0),
                  make_nadam);

}  // namespace trainrun
