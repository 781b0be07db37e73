// Optimizers, schedulers and losses: the kinds and the small interfaces the trainer steps.
#pragma once

#include "registry/registry.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <optional>
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

// A learning-rate schedule, stepped once per optimizer step (after optimizer.step()), as
// PyTorch's schedulers are. Subclasses give the lr (and momentum, for schedules that cycle it)
// of a step in closed form; the base keeps the step count and each group's base lr (torch's
// `initial_lr`, the group's lr when the scheduler was built).
class Scheduler {
 public:
  explicit Scheduler(torch::optim::Optimizer& optimizer);
  virtual ~Scheduler() = default;

  // Sets every param group's lr (and momentum / beta1 when the schedule cycles it) for optimizer
  // step `step`: 0 is the state right after construction, as torch's `last_epoch`.
  void apply(int64_t step);
  void step() { set_steps_done(steps_ + 1); }
  int64_t steps_done() const { return steps_; }
  void set_steps_done(int64_t s) {
    apply(s);
    steps_ = s;
  }
  bool cycles_momentum() const { return momentum(0).has_value(); }

  // For checkpoints (scheduler.json): {"step", "base_lrs"}, as torch's state_dict keeps
  // last_epoch and base_lrs (by then the optimizer's own lr is the scheduled one, not the base).
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);  // std::invalid_argument if it does not fit

 protected:
  // The lr at `step` of a group whose base lr is `base_lr`.
  virtual double lr(int64_t step, double base_lr) const = 0;
  // Momentum (SGD, RMSprop) or beta1 (Adam, AdamW) at `step`, for schedules that cycle it.
  virtual std::optional<double> momentum(int64_t step) const { return std::nullopt; }

 private:
  torch::optim::Optimizer& optimizer_;
  std::vector<double> base_lrs_;
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
// Group 0's momentum (SGD, RMSprop) or beta1 (Adam, AdamW); nullopt when the optimizer has neither.
std::optional<double> current_momentum(const torch::optim::Optimizer& optimizer);
// Sets every group's momentum or beta1 (torch's OneCycleLR does the same); false when the
// optimizer has neither.
bool set_momentum(torch::optim::Optimizer& optimizer, double value);

class Loss {
 public:
  virtual ~Loss() = default;
  // Mean loss of a batch; `log_probs` says the model already applied log_softmax. `target`: class
  // indices (N, int64) or, where takes_probabilities(), probabilities (N x C, float) as
  // torch.nn.functional.cross_entropy takes them (a batch transform's soft targets).
  virtual at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const = 0;
  virtual bool takes_probabilities() const { return false; }
};

// sklearn's compute_class_weight('balanced'): n_samples / (n_classes * count_c) for each class c,
// from the training split's counts (train.loss.weight: balanced). Every count must be > 0, as
// sklearn requires each class to occur.
std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts);

template <>
struct Kind<Loss> {
  static constexpr const char* name = "losses";
  using Factory = std::function<std::shared_ptr<Loss>(const Config&)>;
};

}  // namespace trainrun
