#include "runner/train/loss_scaler.h"

#include <ATen/ATen.h>

namespace trainrun {

LossScaler::LossScaler(bool enabled, LossScalerOptions options)
    : enabled_(enabled), options_(options), scale_(options.init_scale) {}

at::Tensor LossScaler::scale(const at::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }

bool LossScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!enabled_ || unscaled_) return found_inf_;
  unscaled_ = true;
  found_inf_ = false;
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return false;
  // GradScaler multiplies by the float32 reciprocal of the scale.
  auto options = at::TensorOptions().dtype(at::kFloat).device(grads.front().device());
  at::Tensor found = at::zeros({1}, options), inv = at::full({1}, float(1.0 / scale_), options);
  if (grads.front().is_cuda()) {
    // GradScaler.unscale_'s one fused pass over every gradient (a CUDA kernel in LibTorch 1.13 and 2.x).
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
  } else {
    for (auto& g : grads) {
      g.mul_(inv);
      found = at::maximum(found, at::isfinite(g).all().logical_not().to(at::kFloat));
    }
  }
  // The step's one host read, as GradScaler._maybe_opt_step's found_inf.item(): whether to step.
  found_inf_ = found.item<float>() > 0;
  return found_inf_;
}

void LossScaler::update() {
  if (!enabled_) return;
  // torch's _amp_update_scale_ kernel, on the host: found_inf was read for the step anyway, so
  // this costs no wait for the device, and the scale stays a double for scaler.json.
  if (found_inf_) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  unscaled_ = false;
}

}  // namespace trainrun
