// The optimizer and scheduler over the trainable parameters, and the optimizer step that closes
// a group of micro-batches (unscale, clip or measure; then step, scheduler step).
#pragma once

#include "runner/recipe/job.h"
#include "runner/train/loss_scaler.h"

#include <memory>
#include <optional>
#include <vector>

namespace trainrun {

struct Optimization {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<Scheduler> scheduler;
};

Optimization build_optimization(const Job& job, int64_t total_steps, int64_t steps_per_epoch);

// Before the optimizer step that closes k micro-batches: gradients unscaled (fp16), clipped to
// max_grad_norm (> 0) or, when `want_norm`, measured; returns their norm before clipping
// (nullopt when neither).
std::optional<double> prepare_optimizer_step(LossScaler& scaler, const std::vector<at::Tensor>& trainable,
                                             double max_grad_norm, bool want_norm);

// The optimizer step and the scheduler's; GradScaler: an fp16 overflow skips the step, and (as
// Accelerate) the scheduler's with it; then the scale's update. The gradients stay (zero_grad is
// the caller's, after on_optimizer_step).
void take_optimizer_step(Optimization& opt, LossScaler& scaler);

}  // namespace trainrun
