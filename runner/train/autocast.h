// torch.autocast(device_type, dtype) as a scope: bf16 on CPU or CUDA, fp16 on CUDA only.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/Device.h>

#include <string>

namespace trainrun {

class Autocast {
 public:
  Autocast(const std::string& precision, const c10::Device& device)
      : on_(precision == "bf16" || precision == "fp16"), cuda_(device.is_cuda()) {
    if (!on_) return;
    at::ScalarType dtype = precision == "bf16" ? at::kBFloat16 : at::kHalf;
    prev_ = cuda_ ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
    if (cuda_) {
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(dtype);
    } else {
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(dtype);
    }
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (cuda_) at::autocast::set_enabled(prev_);
    else at::autocast::set_cpu_enabled(prev_);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_, cuda_;
  bool prev_ = false;
};

}  // namespace trainrun
