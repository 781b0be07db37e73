#include "runner/train/optimization.h"

#include <torch/torch.h>

namespace trainrun {

namespace {

// The global L2 norm of the gradients, as torch.nn.utils.clip_grad_norm_ computes (and the
// Trainer logs as grad_norm): the norm of the per-parameter norms.
double global_grad_norm(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().detach().norm(2));
  return norms.empty() ? 0.0 : at::stack(norms).norm(2).item<double>();
}

}  // namespace

Optimization build_optimization(const Job& job, int64_t total_steps, int64_t steps_per_epoch) {
  Optimization o;
  o.optimizer = build_optimizer(job);
  o.scheduler = build_scheduler(job, *o.optimizer, total_steps, steps_per_epoch);
  return o;
}

std::optional<double> prepare_optimizer_step(LossScaler& scaler, const std::vector<at::Tensor>& trainable,
                                             double max_grad_norm, bool want_norm) {
  scaler.unscale(trainable);  // clipping, grad_norm and callbacks see true gradients
  if (max_grad_norm > 0) return torch::nn::utils::clip_grad_norm_(trainable, max_grad_norm);
  if (want_norm) return global_grad_norm(trainable);
  return std::nullopt;
}

void take_optimizer_step(Optimization& opt, LossScaler& scaler) {
  if (!scaler.step_skipped()) {
    opt.optimizer->step();
    opt.scheduler->step();
  }
  scaler.update();
}

}  // namespace trainrun
