#include "runner/train/loss_sums.h"

#include <ATen/ATen.h>

namespace trainrun {

DeviceLossSums::DeviceLossSums(LoopSums& host, c10::Device device) : host_(host), device_(device) { upload(); }

void DeviceLossSums::upload() {
  values_ = at::tensor({host_.loss_since_log, double(host_.batches_since_log), host_.loss_total,
                        double(host_.batches_total)}, at::kDouble).to(device_);
  nonfinite_ = at::zeros({}, values_.options());
}

void DeviceLossSums::add(const at::Tensor& loss, bool stop_on_nonfinite) {
  at::Tensor l = loss.detach().to(at::kDouble), finite = at::isfinite(l);
  at::Tensor counted = at::where(finite, l, at::zeros_like(l)), one = finite.to(at::kDouble);
  values_ += at::stack({counted, one, counted, one});
  if (stop_on_nonfinite) nonfinite_ = at::where(finite, nonfinite_, l);
}

at::Tensor DeviceLossSums::take_nonfinite() {
  at::Tensor loss = nonfinite_;
  nonfinite_ = at::zeros({}, values_.options());
  return loss;
}

LoopSums& DeviceLossSums::read() {
  at::Tensor v = values_.cpu();
  auto a = v.accessor<double, 1>();
  host_.loss_since_log = a[0], host_.batches_since_log = int64_t(a[1]);
  host_.loss_total = a[2], host_.batches_total = int64_t(a[3]);
  return host_;
}

void DeviceLossSums::start_log_window() {
  host_.loss_since_log = 0, host_.batches_since_log = 0;
  values_.narrow(0, 0, 2).zero_();
}

}  // namespace trainrun
