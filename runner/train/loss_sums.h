// The loop's loss sums kept on the device: a micro-batch adds its loss without a host read (on
// CUDA a read waits for the GPU). The host copy (LoopSums, saved in checkpoints) is read back
// when a log line, a checkpoint or the end needs it, and uploaded after a resume; the device adds
// the same doubles in the same order as the host would, so the sums are the same to the bit.
#pragma once

#include "components/callbacks/trainer_state.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace trainrun {

class DeviceLossSums {
 public:
  DeviceLossSums(LoopSums& host, c10::Device device);
  void upload();
  // A micro-batch's loss: a finite one joins the sums; a nan/inf one is remembered for the step's
  // agreement when `stop_on_nonfinite` (fp32/bf16) and left out either way (fp16: GradScaler
  // skips the step; as the Trainer's logging_nan_inf_filter, it stays out of the logged mean).
  void add(const at::Tensor& loss, bool stop_on_nonfinite);
  // The last non-finite loss since the previous call (nan, inf or -inf; 0 if none) as a device
  // scalar, and a fresh start.
  at::Tensor take_nonfinite();
  LoopSums& read();
  void start_log_window();

 private:
  LoopSums& host_;
  c10::Device device_;
  at::Tensor values_;     // loss_since_log, batches_since_log, loss_total, batches_total
  at::Tensor nonfinite_;  // double scalar: the last nan/inf loss, or 0
};

}  // namespace trainrun
