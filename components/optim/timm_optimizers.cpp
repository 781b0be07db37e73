// lion, lamb: timm's Lion and Lamb (timm/optim/lion.py, timm/optim/lamb.py at
// huggingface/pytorch-image-models aa4b5850c1543fa488abf260f18390eda46cf85d), op for op, as
// torch::optim optimizers (save/load like Adam's).
// - Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): decoupled decay
//   p *= 1 - lr * wd; p -= lr * sign(beta1 * m + (1 - beta1) * g); m = lerp(m, g, 1 - beta2).
// - Lamb (You et al. 2019; timm's NVLAMB variant of apex's FusedLAMB): grads divided by
//   max(1, global grad norm / max_grad_norm) (in place, as timm does), Adam's update (with
//   grad_averaging, (1 - beta1) on the gradient) plus L2 weight decay, times the trust ratio
//   ||p|| / ||update|| (1 where either is 0; at most 1 with trust_clip) on parameters with weight
//   decay (all with always_adapt). timm counts steps per group; here every parameter of a group
//   carries the group's count, which is the same number.
// timm's caution, decoupled_decay, corrected_weight_decay and maximize are not offered.
#include "components/optim/custom_optimizer.h"
#include "components/optim/optim.h"
#include "components/optim/param_groups.h"

#include <torch/torch.h>

#include <cmath>
#include <optional>

namespace trainrun {
namespace {

struct LionOptions : torch::optim::OptimizerCloneableOptions<LionOptions>, Beta1Option {
  LionOptions(double lr = 1e-4) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-4;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.99);
  TORCH_ARG(double, weight_decay) = 0;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  double& beta1() override { return std::get<0>(betas_); }
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  }
};

struct LionState : torch::optim::OptimizerCloneableParamState<LionState> {
  TORCH_ARG(torch::Tensor, exp_avg);

 public:
  void serialize(torch::serialize::OutputArchive& archive) const override { _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg); }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  }
};

class Lion : public CustomOptimizer<LionState, LionOptions> {
 public:
  using CustomOptimizer::CustomOptimizer;

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss = closure ? closure() : torch::Tensor();
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      const LionOptions& o = options_of(group);
      const auto [beta1, beta2] = o.betas();
      const double lr = o.lr();
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        LionState* s = find_state(p);
        if (!s) s = &new_state(p, LionState().exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve)));
        const torch::Tensor& grad = p.grad();
        p.mul_(1 - lr * o.weight_decay());
        torch::Tensor update = s->exp_avg().mul(beta1).add_(grad, 1 - beta1).sign_();
        p.add_(update, -lr);
        s->exp_avg().lerp_(grad, 1 - beta2);
      }
    }
    return loss;
  }
};

struct LambOptions : torch::optim::OptimizerCloneableOptions<LambOptions>, Beta1Option {
  LambOptions(double lr = 1e-3) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(bool, bias_correction) = true;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0.01;
  TORCH_ARG(bool, grad_averaging) = true;
  TORCH_ARG(c10::optional<double>, max_grad_norm) = 1.0;
  TORCH_ARG(bool, trust_clip) = false;
  TORCH_ARG(bool, always_adapt) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  double& beta1() override { return std::get<0>(betas_); }
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(grad_averaging);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(max_grad_norm);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, grad_averaging);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG_OPTIONAL(double, max_grad_norm);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  }
};

struct LambState : torch::optim::OptimizerCloneableParamState<LambState> {
  TORCH_ARG(int64_t, step) = 0;  // the group's step count (timm's group['step'])
  TORCH_ARG(torch::Tensor, exp_avg) = {};
  TORCH_ARG(torch::Tensor, exp_avg_sq) = {};

 public:
  void serialize(torch::serialize::OutputArchive& archive) const override {
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
  }
  void serialize(torch::serialize::InputArchive& archive) override {
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
  }
};

class Lamb : public CustomOptimizer<LambState, LambOptions> {
 public:
  using CustomOptimizer::CustomOptimizer;

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss = closure ? closure() : torch::Tensor();
    torch::NoGradGuard no_grad;
    // timm reads max_grad_norm from the optimizer's defaults: one clip over all groups.
    const torch::Tensor clip = clip_factor(static_cast<const LambOptions&>(defaults()).max_grad_norm());
    for (auto& group : param_groups_) {
      const LambOptions& o = options_of(group);
      const auto [beta1, beta2] = o.betas();
      const double beta3 = o.grad_averaging() ? 1 - beta1 : 1.0;
      const double wd = o.weight_decay();
      int64_t step = 0;
      bool any_grad = false;
      for (auto& p : group.params()) {
        LambState* s = find_state(p);
        if (!s) s = &new_state(p, LambState());
        s->step(s->step() + 1);
        step = s->step();
        any_grad = any_grad || p.grad().defined();
      }
      if (!any_grad) continue;
      double bias_correction1 = 1, bias_correction2 = 1;
      if (o.bias_correction()) {
        bias_correction1 = 1 - std::pow(beta1, double(step));
        bias_correction2 = 1 - std::pow(beta2, double(step));
      }
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        torch::Tensor grad = p.grad();
        if (clip.defined()) grad.div_(clip);
        LambState& s = *find_state(p);
        if (!s.exp_avg().defined()) {
          s.exp_avg(torch::zeros_like(p));
          s.exp_avg_sq(torch::zeros_like(p));
        }
        s.exp_avg().mul_(beta1).add_(grad, beta3);
        s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        torch::Tensor denom = (s.exp_avg_sq().sqrt() / std::pow(bias_correction2, 0.5)).add_(o.eps());
        torch::Tensor update = (s.exp_avg() / bias_correction1).div_(denom);
        if (wd != 0) update.add_(p, wd);
        if (wd != 0 || o.always_adapt()) {
          // Layer-wise adaptation; by default skipped on parameters without weight decay.
          torch::Tensor w_norm = p.norm(2.0), g_norm = update.norm(2.0);
          torch::Tensor one = torch::ones_like(w_norm);
          torch::Tensor trust_ratio = torch::where(w_norm > 0, torch::where(g_norm > 0, w_norm / g_norm, one), one);
          if (o.trust_clip()) trust_ratio = torch::clamp(trust_ratio, c10::nullopt, 1.0);
          update.mul_(trust_ratio);
        }
        p.add_(update, -o.lr());
      }
    }
    return loss;
  }

 private:
  // max(1, ||all grads|| / max_grad_norm); undefined when there is no clipping.
  torch::Tensor clip_factor(const c10::optional<double>& max_grad_norm) {
    if (!max_grad_norm) return {};
    std::vector<torch::Tensor> norms;
    for (auto& group : param_groups_)
      for (auto& p : group.params())
        if (p.grad().defined()) norms.push_back(at::linalg_vector_norm(p.grad()));
    if (norms.empty()) return {};
    torch::Tensor global = at::linalg_vector_norm(torch::stack(norms));
    return (global / *max_grad_norm).clamp_(1.0);
  }
};

Beta1Option::betas_t two_betas(const Config& c) {
  auto betas = c.get<std::vector<double>>("betas");
  if (betas.size() != 2) throw std::invalid_argument(c.path() + ".betas: needs two values (beta1, beta2)");
  return {betas[0], betas[1]};
}

std::shared_ptr<torch::optim::Optimizer> make_lion(const Config& c, const ParamGroups& groups) {
  return make_optimizer<Lion>(groups, LionOptions(c.get<double>("lr")).betas(two_betas(c)).weight_decay(c.get<double>("weight_decay")));
}

std::shared_ptr<torch::optim::Optimizer> make_lamb(const Config& c, const ParamGroups& groups) {
  auto o = LambOptions(c.get<double>("lr"))
               .bias_correction(c.get<bool>("bias_correction"))
               .betas(two_betas(c))
               .eps(c.get<double>("eps"))
               .weight_decay(c.get<double>("weight_decay"))
               .grad_averaging(c.get<bool>("grad_averaging"))
               .trust_clip(c.get<bool>("trust_clip"))
               .always_adapt(c.get<bool>("always_adapt"));
  o.max_grad_norm(c.is_null("max_grad_norm") ? c10::nullopt : c10::optional<double>(c.get<double>("max_grad_norm")));
  return make_optimizer<Lamb>(groups, o);
}

}  // namespace

TRAINRUN_REGISTER(torch::optim::Optimizer, "lion", "Lion, sign of an interpolated momentum (timm.optim.Lion; decoupled weight decay)",
                  optimizer_schema("1e-4", "0.0")
                      .add("betas", Type::FloatList, yaml("[0.9, 0.99]"),
                           "(beta1: update interpolation, beta2: momentum decay)").min(0).below(1),
                  make_lion);

TRAINRUN_REGISTER(
    torch::optim::Optimizer, "lamb", "LAMB, layer-wise adaptive Adam for large batches (timm.optim.Lamb)",
    optimizer_schema("1e-3", "0.01")
        .add("betas", Type::FloatList, yaml("[0.9, 0.999]"), "(beta1, beta2)").min(0).below(1)
        .add("eps", Type::Float, yaml("1e-6"), "term added to the denominator").above(0)
        .add("bias_correction", Type::Bool, yaml("true"), "Adam's bias correction of the moments")
        .add("grad_averaging", Type::Bool, yaml("true"), "weigh the gradient by (1 - beta1) in the first moment")
        .add("max_grad_norm", Type::Float, yaml("1.0"),
             "divide all gradients by max(1, global grad norm / max_grad_norm) inside the step; null = off")
        .nullable().above(0)
        .add("trust_clip", Type::Bool, yaml("false"), "clip the trust ratio at 1 (LAMBC)")
        .add("always_adapt", Type::Bool, yaml("false"), "apply the trust ratio to parameters without weight decay too"),
    make_lamb);

}  // namespace trainrun
