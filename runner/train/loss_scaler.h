// Dynamic loss scaling for fp16 with torch.cuda.amp.GradScaler's semantics: multiply the loss
// by `scale` before backward, unscale the gradients before clipping and stepping, skip the
// optimizer step when any gradient is inf/NaN (scale *= backoff), and grow the scale
// (scale *= growth) after `growth_interval` clean steps in a row.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace trainrun {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2**16, GradScaler's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(bool enabled, LossScalerOptions options = {});
  bool enabled() const { return enabled_; }
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides the gradients by the scale (once per step); returns whether any was inf/NaN.
  bool unscale(const std::vector<at::Tensor>& params);
  // After the optimizer step (or its skipping): backs off or grows the scale.
  void update();
  bool step_skipped() const { return found_inf_; }
  double current_scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  void load(double scale, int64_t growth_tracker) { scale_ = scale, growth_tracker_ = growth_tracker; }

 private:
  bool enabled_;
  LossScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  bool found_inf_ = false;
  bool unscaled_ = false;
};

}  // namespace trainrun
