// Optimizers, schedulers and losses: the kinds and the small interfaces the trainer steps.
#pragma once

#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace trainrun {

using NamedParameters = std::vector<std::pair<std::string, at::Tensor>>;

template <>
struct Kind<torch::optim::Optimizer> {
  static constexpr const char* name = "optimizers";
  // Gets the trainable parameters by name, so `no_decay` can group them.
  using Factory = std::function<std::shared_ptr<torch::optim::Optimizer>(const Config&, const NamedParameters&)>;
};

// Splits parameters into a decayed group and a zero-decay one. Patterns: `bias` (names ending
// in "bias"), `norm` (1-D weights: BatchNorm/LayerNorm scales, as timm's
// param_groups_weight_decay), or a glob over the parameter name.
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> split_no_decay(
    const NamedParameters& params, const std::vector<std::string>& patterns);

// A learning-rate schedule, stepped once per optimizer step (after optimizer.step()).
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Sets every group's learning rate for optimizer step `step` (0-based).
  virtual void apply(int64_t step) = 0;
  void step() { apply(++steps_); }
  int64_t steps_done() const { return steps_; }
  void set_steps_done(int64_t s) { steps_ = s; apply(s); }

 private:
  int64_t steps_ = 0;
};

struct ScheduleContext {
  torch::optim::Optimizer* optimizer = nullptr;
  int64_t total_steps = 0;  // optimizer steps in the whole run
  int64_t steps_per_epoch = 0;
};

template <>
struct Kind<Scheduler> {
  static constexpr const char* name = "schedulers";
  using Factory = std::function<std::shared_ptr<Scheduler>(const Config&, const ScheduleContext&)>;
};

double current_lr(const torch::optim::Optimizer& optimizer);  // group 0's

class Loss {
 public:
  virtual ~Loss() = default;
  // Mean loss of a batch; `log_probs` says the model already applied log_softmax.
  virtual at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const = 0;
};

template <>
struct Kind<Loss> {
  static constexpr const char* name = "losses";
  using Factory = std::function<std::shared_ptr<Loss>(const Config&)>;
};

}  // namespace trainrun
