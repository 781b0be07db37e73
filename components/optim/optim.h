// Optimizers, schedulers and losses: the kinds and the small interfaces the trainer steps.
#pragma once

#include "registry/registry.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <map>
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

// One parameter group as torch's optimizers take them (timm's param group dicts): its
// parameters by name, the factor on the optimizer's (and so the schedule's) lr, timm's
// `lr_scale`, and its weight decay (nullopt: the optimizer's).
struct ParamGroup {
  std::string name;  // as timm names layer-decay groups ("layer_3_decay"), or "decay" / "no_decay"
  NamedParameters params;
  double lr_scale = 1.0;
  std::optional<double> weight_decay;
};
using ParamGroups = std::vector<ParamGroup>;

template <>
struct Kind<torch::optim::Optimizer> {
  static constexpr const char* name = "optimizers";
  static constexpr const char* singular = "optimizer";  // in messages: "unknown optimizer 'x'"
  // Gets the planned parameter groups (plan_param_groups); one torch param group each.
  using Factory = std::function<std::shared_ptr<torch::optim::Optimizer>(const Config&, const ParamGroups&)>;
};

// The keys every optimizer has: lr, weight_decay and the grouping rules (no_decay, layer_decay,
// groups). An optimizer's schema starts from this (components/optim/param_groups.h).
Schema optimizer_schema(const char* lr, const char* weight_decay);
// One entry of `optimizer.groups` ({params: GLOB, lr_scale, weight_decay}), checked by the recipe
// engine as it checks freeze rules.
const Schema& param_group_rule_schema();

// Which layer each parameter belongs to, for layer-wise lr decay: timm's
// group_parameters(model, model.group_matcher(coarse=False), reverse=True). `of` maps a
// parameter name to its layer id in [0, count).
struct LayerIds {
  std::function<int64_t(const std::string&)> of;
  int64_t count = 0;
};

// An extra lr factor by parameter name (freeze rules' `lr_scale`); null: none.
using LrScaleOf = std::function<double(const std::string&)>;

// The groups an optimizer section asks for over `params` (in named_parameters() order):
// - no_decay: zero weight decay for `bias` (names ending in "bias"), `norm` (other 1-D weights,
//   as timm's param_groups_weight_decay) and globs;
// - layer_decay D (needs `layers`): timm's param_groups_layer_decay, lr_scale D^(last - layer);
// - groups: [{params: GLOB, lr_scale, weight_decay}], last match wins; weight_decay here wins
//   over no_decay; lr_scale multiplies the layer's;
// - `extra` lr factors multiply too.
// Without layer_decay, groups or extra scales the plan is the decayed group then the zero-decay
// one (each only if non-empty), as before; with them, groups are named and ordered as timm's
// (by first appearance).
ParamGroups plan_param_groups(const Config& optimizer, const NamedParameters& params, const LayerIds* layers = nullptr,
                              const LrScaleOf& extra = nullptr);

// A linear warm-up before a schedule: over `steps` optimizer steps the lr rises from
// start_factor * base lr towards the base lr (torch's LinearLR, end_factor 1, in closed form;
// start_factor 0 is transformers' step / max(1, warmup_steps)). `shift`: the schedule proper
// starts after the warm-up, counting from 0 there (torch's SequentialLR([LinearLR, S],
// milestones=[steps]), torchvision's recipe); else it counts from the run's step 0 and already
// covers the warm-up (transformers' schedules).
struct Warmup {
  int64_t steps = 0;
  double start_factor = 0;
  bool shift = false;
};

// A learning-rate schedule, stepped once per optimizer step (after optimizer.step()), as
// PyTorch's schedulers are. Subclasses give the lr (and momentum, for schedules that cycle it)
// of a step in closed form; the base keeps the step count, each group's base lr (torch's
// `initial_lr`, the group's lr when the scheduler was built) and the warm-up.
class Scheduler {
 public:
  explicit Scheduler(torch::optim::Optimizer& optimizer, Warmup warmup = {});
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

  // For schedules that decide from evaluations (reduce_on_plateau): the trainer hands over every
  // evaluation's metrics (eval_loss, eval_accuracy, ...: already reduced over ranks, so every
  // rank decides alike). Others ignore them.
  virtual bool observes_evaluations() const { return false; }
  virtual void observe(const std::map<std::string, double>& /*eval_metrics*/) {}

  // For checkpoints (scheduler.json): {"step", "base_lrs"}, as torch's state_dict keeps
  // last_epoch and base_lrs (by then the optimizer's own lr is the scheduled one, not the base).
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);  // std::invalid_argument if it does not fit

 protected:
  // The lr at `step` of a group whose base lr is `base_lr` (past the warm-up; `step` counted
  // from its end where the warm-up shifts the schedule).
  virtual double lr(int64_t step, double base_lr) const = 0;
  // Momentum (SGD, RMSprop) or beta1 (Adam, AdamW) at `step`, for schedules that cycle it.
  virtual std::optional<double> momentum(int64_t step) const { return std::nullopt; }
  // The lr of group `group` at `step`: lr(step, base_lr) unless the schedule keeps per-group lrs.
  virtual double group_lr(int64_t step, std::size_t /*group*/, double base_lr) const { return lr(step, base_lr); }
  // What a schedule keeps beyond the step (reduce_on_plateau's best value, counters, lrs), in
  // scheduler.json next to "step" and "base_lrs"; load_more throws std::invalid_argument.
  virtual void save_more(nlohmann::json& /*state*/) const {}
  virtual void load_more(const nlohmann::json& /*state*/) {}
  void reapply() { apply(steps_); }

 private:
  torch::optim::Optimizer& optimizer_;
  Warmup warmup_;
  std::vector<double> base_lrs_;
  int64_t steps_ = 0;
};

struct ScheduleContext {
  torch::optim::Optimizer* optimizer = nullptr;
  int64_t total_steps = 0;  // optimizer steps in the whole run
  int64_t steps_per_epoch = 0;
  double optimizer_lr = 0;  // the recipe's optimizer.lr (a group's lr_scale is its lr / this); 0: unknown
};

// The warm-up keys every schedule but onecycle has: warmup_steps, warmup_ratio (transformers'
// names: warmup_steps = ceil(warmup_ratio * total steps); not both) and, where the warm-up is
// torch's LinearLR (`start_factor`), warmup_start_factor.
Schema warmup_schema(Schema schema, bool start_factor);
Warmup warmup_of(const Config& c, const ScheduleContext& ctx, bool shift);

template <>
struct Kind<Scheduler> {
  static constexpr const char* name = "schedulers";
  static constexpr const char* singular = "scheduler";  // in messages: "unknown scheduler 'x'"
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
  // True for a loss on one sigmoid per class (bce_with_logits, asymmetric): it takes multi-hot
  // targets (N x C float), what train.task: multilabel gives.
  virtual bool multilabel() const { return false; }
};

// sklearn's compute_class_weight('balanced'): n_samples / (n_classes * count_c) for each class c,
// from the training split's counts (train.loss.weight: balanced). Every count must be > 0, as
// sklearn requires each class to occur.
std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts);

template <>
struct Kind<Loss> {
  static constexpr const char* name = "losses";
  static constexpr const char* singular = "loss";  // in messages: "unknown loss 'x'"
  using Factory = std::function<std::shared_ptr<Loss>(const Config&)>;
};

}  // namespace trainrun
