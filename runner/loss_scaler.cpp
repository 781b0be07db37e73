#include "runner/loss_scaler.h"

#include <ATen/ATen.h>

namespace trainrun {

LossScaler::LossScaler(bool enabled, LossScalerOptions options)
    : enabled_(enabled), options_(options), scale_(options.init_scale) {}

at::Tensor LossScaler::scale(const at::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }

bool LossScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!enabled_ || unscaled_) return found_inf_;
  // GradScaler multiplies by the float32 reciprocal of the scale.
  double inv = double(float(1.0 / scale_));
  found_inf_ = false;
  for (const auto& p : params) {
    at::Tensor g = p.grad();
    if (!g.defined()) continue;
    g.mul_(inv);
    if (!found_inf_ && !at::isfinite(g).all().item<bool>()) found_inf_ = true;
  }
  unscaled_ = true;
  return found_inf_;
}

void LossScaler::update() {
  if (!enabled_) return;
  // torch's _amp_update_scale_ kernel, on the host.
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
