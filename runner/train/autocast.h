// torch.autocast(device_type, dtype) as a scope: bf16 on CPU or CUDA, fp16 on CUDA only.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/Device.h>

#include "runner/distributed/torch_compat.h"

#include <optional>
#include <string>

namespace trainrun {

// The autocast state of CPU and CUDA (on or off, and the dtype of each): what
// torch.utils.checkpoint saves when it runs a forward, to recompute it in backward the same way.
struct AutocastState {
  bool cpu = false, cuda = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
};

class Autocast {
 public:
  static AutocastState current() {
    return {enabled(c10::DeviceType::CPU), enabled(c10::DeviceType::CUDA), dtype(c10::DeviceType::CPU),
            dtype(c10::DeviceType::CUDA)};
  }
  // Autocast as `state` had it, in a nesting level of its own (as torch.autocast(...) re-entered);
  // the state before, when it ends.
  explicit Autocast(const AutocastState& state) : on_(true), replay_(true), before_(current()) {
    apply(state);
    at::autocast::increment_nesting();
  }

  Autocast(const std::string& precision, const c10::Device& device)
      : on_(precision == "bf16" || precision == "fp16"), type_(device.type()) {
    if (!on_) return;
    prev_ = enabled(type_);
    set(type_, true, precision == "bf16" ? at::kBFloat16 : at::kHalf);
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (replay_)
      apply(before_);
    else
      set(type_, prev_, std::nullopt);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  static bool enabled(c10::DeviceType type) {
#ifdef TRAINRUN_AUTOCAST_BY_DEVICE
    return at::autocast::is_autocast_enabled(type);
#else
    return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
  }
  static at::ScalarType dtype(c10::DeviceType type) {
#ifdef TRAINRUN_AUTOCAST_BY_DEVICE
    return at::autocast::get_autocast_dtype(type);
#else
    return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
  }
  static void apply(const AutocastState& s) {
    set(c10::DeviceType::CPU, s.cpu, s.cpu_dtype);
    set(c10::DeviceType::CUDA, s.cuda, s.cuda_dtype);
  }
  static void set(c10::DeviceType type, bool on, std::optional<at::ScalarType> dtype) {
#ifdef TRAINRUN_AUTOCAST_BY_DEVICE
    at::autocast::set_autocast_enabled(type, on);
    if (dtype) at::autocast::set_autocast_dtype(type, *dtype);
#else
    bool cuda = type == c10::DeviceType::CUDA;
    cuda ? at::autocast::set_enabled(on) : at::autocast::set_cpu_enabled(on);
    if (dtype) cuda ? at::autocast::set_autocast_gpu_dtype(*dtype) : at::autocast::set_autocast_cpu_dtype(*dtype);
#endif
  }

  bool on_;
  bool replay_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool prev_ = false;
  AutocastState before_;
};

}  // namespace trainrun
