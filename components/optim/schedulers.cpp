// Learning-rate schedules, stepped per optimizer step as PyTorch's schedulers are, each giving
// torch.optim.lr_scheduler's numbers in closed form (no drift from torch's recursive updates
// beyond rounding, and a resumed run lands on exactly the same lr).
#include "components/optim/optim.h"

#include <torch/optim.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace trainrun {

Scheduler::Scheduler(torch::optim::Optimizer& optimizer, Warmup warmup) : optimizer_(optimizer), warmup_(warmup) {
  for (auto& g : optimizer.param_groups()) base_lrs_.push_back(g.options().get_lr());
}

void Scheduler::apply(int64_t step) {
  auto& groups = optimizer_.param_groups();
  // Groups added since (gradual unfreezing) follow the schedule from their own lr, which
  // add_param_groups sets to the recipe's; torch's schedulers have no such rule.
  for (std::size_t i = base_lrs_.size(); i < groups.size(); ++i) base_lrs_.push_back(groups[i].options().get_lr());
  std::optional<double> m = momentum(step);
  const int64_t w = warmup_.steps;
  const double sf = warmup_.start_factor;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const double base = base_lrs_.at(i);
    groups[i].options().set_lr(step < w ? base * (sf + (1.0 - sf) * double(step) / double(w))
                                        : group_lr(warmup_.shift ? step - w : step, i, base));
  }
  if (m) set_momentum(optimizer_, *m);
}

nlohmann::json Scheduler::state() const {
  nlohmann::json s = {{"step", steps_}, {"base_lrs", base_lrs_}};
  save_more(s);
  return s;
}

void Scheduler::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("step") || !state["step"].is_number_integer() ||
      !state.contains("base_lrs") || !state["base_lrs"].is_array())
    throw std::invalid_argument("scheduler state: expected {\"step\": int, \"base_lrs\": [float, ...]}");
  if (state["step"].get<int64_t>() < 0)
    throw std::invalid_argument("scheduler state: step is " + state["step"].dump() + ", expected >= 0");
  std::vector<double> base;
  for (const auto& lr : state["base_lrs"]) {
    if (!lr.is_number() || !std::isfinite(lr.get<double>()) || lr.get<double>() < 0)
      throw std::invalid_argument("scheduler state: base_lrs holds " + lr.dump() + ", expected learning rates >= 0");
    base.push_back(lr.get<double>());
  }
  if (base.size() != optimizer_.param_groups().size())
    throw std::invalid_argument("scheduler state: " + std::to_string(base.size()) + " base lrs for " +
                                std::to_string(optimizer_.param_groups().size()) + " parameter groups");
  load_more(state);
  base_lrs_ = std::move(base);
  set_steps_done(state["step"].get<int64_t>());
}

Schema warmup_schema(Schema schema, bool start_factor) {
  schema.add("warmup_steps", Type::Int, yaml("0"), "linear warm-up steps; 0 = none").min(0)
      .add("warmup_ratio", Type::Float, yaml("0.0"),
           "warm-up as a fraction of the run's steps (rounded up), instead of warmup_steps").range(0, 1);
  if (start_factor)
    schema.add("warmup_start_factor", Type::Float, yaml("0.01"), "warm-up starts at this fraction of the lr").above(0).max(1);
  return schema;
}

Warmup warmup_of(const Config& c, const ScheduleContext& ctx, bool shift) {
  Warmup w;
  w.steps = c.get<int64_t>("warmup_steps");
  const double ratio = c.get<double>("warmup_ratio");
  if (w.steps > 0 && ratio > 0)
    throw std::invalid_argument(c.path() + ".warmup_ratio: set warmup_steps or warmup_ratio, not both");
  if (ratio > 0) w.steps = int64_t(std::ceil(ratio * double(ctx.total_steps)));  // transformers' get_warmup_steps
  w.start_factor = c.has("warmup_start_factor") ? c.get<double>("warmup_start_factor") : 0.0;
  w.shift = shift;
  return w;
}

namespace {

// The recipe's optimizer lr, unchanged for the whole run (after the warm-up: transformers'
// get_constant_schedule_with_warmup).
class Constant : public Scheduler {
 public:
  using Scheduler::Scheduler;

 protected:
  double lr(int64_t, double base_lr) const override { return base_lr; }
};

struct OneCycleOptions {
  double max_lr = 0;
  int64_t total_steps = 0;
  double pct_start = 0.3;
  bool cos = true;  // else linear
  double div_factor = 25, final_div_factor = 1e4;
  bool three_phase = false;
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;
};

// torch.optim.lr_scheduler.OneCycleLR: warm up from max_lr/div_factor to max_lr over pct_start
// of the steps, then anneal to initial/final_div_factor (three_phase: back down to the initial
// lr first), cycling momentum (or Adam's beta1) the other way. Like torch, every group starts
// at max_lr/div_factor whatever the optimizer's lr is, times the group's lr_scale (its lr over
// the recipe's, as timm's schedulers multiply param_group['lr_scale']).
class OneCycle : public Scheduler {
 public:
  OneCycle(torch::optim::Optimizer& opt, const OneCycleOptions& o, double optimizer_lr, const std::string& path)
      : Scheduler(opt), o_(o), optimizer_lr_(optimizer_lr) {
    const double initial = o.max_lr / o.div_factor, min = initial / o.final_div_factor;
    const double total = double(o.total_steps);
    // torch's phase boundaries, float arithmetic and all.
    if (o.three_phase)
      phases_ = {{o.pct_start * total - 1, initial, o.max_lr, o.max_momentum, o.base_momentum},
                 {2 * o.pct_start * total - 2, o.max_lr, initial, o.base_momentum, o.max_momentum},
                 {total - 1, initial, min, o.max_momentum, o.max_momentum}};
    else
      phases_ = {{o.pct_start * total - 1, initial, o.max_lr, o.max_momentum, o.base_momentum},
                 {total - 1, o.max_lr, min, o.base_momentum, o.max_momentum}};
    if (o.cycle_momentum && !current_momentum(opt))
      throw std::invalid_argument(path + ".cycle_momentum: the optimizer has neither momentum nor betas to cycle; "
                                         "set cycle_momentum: false");
    // Only the first step and the last can land in a zero-length phase; torch divides by zero there.
    for (int64_t s : {int64_t(0), o.total_steps})
      if (!std::isfinite(locate(s).pct))
        throw std::invalid_argument(path + ".pct_start: " + show(o.pct_start) + " of " + std::to_string(o.total_steps) +
                                    " steps gives a phase of zero length (PyTorch's OneCycleLR divides by zero "
                                    "here); change pct_start");
  }

 protected:
  double lr(int64_t step, double base_lr) const override {
    auto [p, pct] = locate(step);
    const double v = anneal(p->start_lr, p->end_lr, pct);
    return optimizer_lr_ <= 0 || base_lr == optimizer_lr_ ? v : v * (base_lr / optimizer_lr_);
  }
  std::optional<double> momentum(int64_t step) const override {
    if (!o_.cycle_momentum) return std::nullopt;
    auto [p, pct] = locate(step);
    return anneal(p->start_momentum, p->end_momentum, pct);
  }

 private:
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  struct Position {
    const Phase* phase;
    double pct;
  };

  Position locate(int64_t step) const {
    if (step > o_.total_steps)
      throw std::out_of_range("scheduler: onecycle was stepped to step " + std::to_string(step) + " of a " +
                              std::to_string(o_.total_steps) + "-step schedule (scheduler.total_steps); " +
                              "PyTorch's OneCycleLR raises here too");
    double start = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
      const Phase& p = phases_[i];
      if (double(step) <= p.end_step || i + 1 == phases_.size()) return {&p, (double(step) - start) / (p.end_step - start)};
      start = p.end_step;
    }
    return {};  // unreachable: the last phase always matches
  }

  double anneal(double start, double end, double pct) const {
    if (o_.cos) return end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1);
    return (end - start) * pct + start;
  }

  static std::string show(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  OneCycleOptions o_;
  double optimizer_lr_;
  std::vector<Phase> phases_;
};

// CosineAnnealingLR(T_max, eta_min), after an optional linear warm-up: the same numbers as
// SequentialLR([LinearLR(warmup_start_factor, total_iters=warmup_steps), CosineAnnealingLR],
// milestones=[warmup_steps]), the set-up of torchvision's classification reference.
class Cosine : public Scheduler {
 public:
  Cosine(torch::optim::Optimizer& opt, int64_t t_max, double eta_min, Warmup warmup)
      : Scheduler(opt, warmup), t_max_(t_max), eta_min_(eta_min) {}

 protected:
  double lr(int64_t step, double base_lr) const override {
    return eta_min_ + (base_lr - eta_min_) * (1 + std::cos(M_PI * double(step) / double(t_max_))) / 2;
  }

 private:
  int64_t t_max_;
  double eta_min_;
};

// StepLR: the lr times gamma every `period` optimizer steps (after the warm-up, as in
// SequentialLR([LinearLR, StepLR])).
class Step : public Scheduler {
 public:
  Step(torch::optim::Optimizer& opt, int64_t period, double gamma, Warmup warmup)
      : Scheduler(opt, warmup), period_(period), gamma_(gamma) {}

 protected:
  double lr(int64_t step, double base_lr) const override { return base_lr * std::pow(gamma_, double(step / period_)); }

 private:
  int64_t period_;
  double gamma_;
};

// MultiStepLR: the lr times gamma at each milestone (optimizer steps, sorted, repeats counting
// twice as in torch's Counter), in closed form: gamma ^ bisect_right(milestones, step).
class MultiStep : public Scheduler {
 public:
  MultiStep(torch::optim::Optimizer& opt, std::vector<int64_t> milestones, double gamma, Warmup warmup)
      : Scheduler(opt, warmup), milestones_(std::move(milestones)), gamma_(gamma) {
    std::sort(milestones_.begin(), milestones_.end());
  }

 protected:
  double lr(int64_t step, double base_lr) const override {
    auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
    return base_lr * std::pow(gamma_, double(passed));
  }

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

}  // namespace

TRAINRUN_REGISTER(Scheduler, "constant",
                  "the optimizer's lr for every step, after an optional warm-up from 0 "
                  "(transformers' get_constant_schedule_with_warmup)",
                  warmup_schema(Schema(), false), [](const Config& c, const ScheduleContext& ctx) {
                    return std::make_shared<Constant>(*ctx.optimizer, warmup_of(c, ctx, false));
                  });

TRAINRUN_REGISTER(
    Scheduler, "onecycle", "the 1cycle policy (torch.optim.lr_scheduler.OneCycleLR); ignores the optimizer's lr",
    Schema()
        .required("max_lr", Type::Float, "peak learning rate; the run starts at max_lr/div_factor").above(0)
        .add("total_steps", Type::Int, yaml("null"), "steps in the cycle; null = the run's optimizer steps").min(1)
        .add("pct_start", Type::Float, yaml("0.3"), "fraction of the cycle spent increasing the lr").range(0, 1)
        .add("anneal_strategy", Type::String, yaml("cos"), "how the lr moves within a phase (cosine or straight line)").choices({"cos", "linear"})
        .add("div_factor", Type::Float, yaml("25.0"), "initial lr = max_lr / div_factor").above(0)
        .add("final_div_factor", Type::Float, yaml("1e4"), "final lr = initial lr / final_div_factor").above(0)
        .add("three_phase", Type::Bool, yaml("false"), "go back down to the initial lr before the final annealing")
        .add("cycle_momentum", Type::Bool, yaml("true"), "cycle SGD's momentum / Adam's beta1 inversely to the lr")
        .add("base_momentum", Type::Float, yaml("0.85"), "momentum (beta1) at the peak lr").range(0, 1)
        .add("max_momentum", Type::Float, yaml("0.95"), "momentum (beta1) at the lowest lr").range(0, 1),
    [](const Config& c, const ScheduleContext& ctx) {
      OneCycleOptions o;
      o.max_lr = c.get<double>("max_lr");
      o.total_steps = c.is_null("total_steps") ? ctx.total_steps : c.get<int64_t>("total_steps");
      if (o.total_steps <= 0) throw std::invalid_argument(c.path() + ": the run has no optimizer steps to schedule");
      if (o.total_steps < ctx.total_steps)
        throw std::invalid_argument(c.path() + ".total_steps: " + std::to_string(o.total_steps) +
                                    " is fewer than the run's " + std::to_string(ctx.total_steps) +
                                    " optimizer steps (OneCycleLR cannot step past its total)");
      o.pct_start = c.get<double>("pct_start");
      o.cos = c.get<std::string>("anneal_strategy") == "cos";
      o.div_factor = c.get<double>("div_factor");
      o.final_div_factor = c.get<double>("final_div_factor");
      o.three_phase = c.get<bool>("three_phase");
      o.cycle_momentum = c.get<bool>("cycle_momentum");
      o.base_momentum = c.get<double>("base_momentum");
      o.max_momentum = c.get<double>("max_momentum");
      return std::make_shared<OneCycle>(*ctx.optimizer, o, ctx.optimizer_lr, c.path());
    });

TRAINRUN_REGISTER(
    Scheduler, "cosine",
    "cosine annealing to eta_min (torch.optim.lr_scheduler.CosineAnnealingLR), after an optional linear warm-up",
    warmup_schema(Schema()
                      .add("t_max", Type::Int, yaml("null"), "steps from the lr to eta_min (after warm-up); null = to the end of the run").min(1)
                      .add("eta_min", Type::Float, yaml("0.0"), "lowest learning rate").min(0),
                  true),
    [](const Config& c, const ScheduleContext& ctx) {
      const Warmup w = warmup_of(c, ctx, true);
      const int64_t warmup = w.steps;
      int64_t t_max = c.is_null("t_max") ? ctx.total_steps - warmup : c.get<int64_t>("t_max");
      if (t_max < 1 && warmup == 0) throw std::invalid_argument(c.path() + ": the run has no optimizer steps to schedule");
      if (t_max < 1)
        throw std::invalid_argument(c.path() + ".warmup_steps: " + std::to_string(warmup) + " leaves no step for " +
                                    "the cosine (the run has " + std::to_string(ctx.total_steps) + " optimizer steps)");
      return std::make_shared<Cosine>(*ctx.optimizer, t_max, c.get<double>("eta_min"), w);
    });

TRAINRUN_REGISTER(
    Scheduler, "step",
    "decay the lr by gamma every step_size epochs (torch.optim.lr_scheduler.StepLR), after an optional linear warm-up",
    warmup_schema(Schema()
                      .required("step_size", Type::Int, "epochs between decays (counted after the warm-up)").min(1)
                      .add("gamma", Type::Float, yaml("0.1"), "multiplicative decay").above(0),
                  true),
    [](const Config& c, const ScheduleContext& ctx) {
      if (ctx.steps_per_epoch <= 0) throw std::invalid_argument(c.path() + ": the run has no optimizer steps per epoch");
      return std::make_shared<Step>(*ctx.optimizer, c.get<int64_t>("step_size") * ctx.steps_per_epoch,
                                    c.get<double>("gamma"), warmup_of(c, ctx, true));
    });

namespace {
std::shared_ptr<Scheduler> make_multistep_schedule(const Config& c, const ScheduleContext& ctx) {
  if (ctx.steps_per_epoch <= 0) throw std::invalid_argument(c.path() + ": the run has no optimizer steps per epoch");
  std::vector<int64_t> milestones;
  for (int64_t epoch : c.get<std::vector<int64_t>>("milestones")) milestones.push_back(epoch * ctx.steps_per_epoch);
  return std::make_shared<MultiStep>(*ctx.optimizer, std::move(milestones), c.get<double>("gamma"), warmup_of(c, ctx, true));
}
}  // namespace

TRAINRUN_REGISTER(
    Scheduler, "multistep",
    "decay the lr by gamma at each milestone epoch (torch.optim.lr_scheduler.MultiStepLR), after an optional linear warm-up",
    warmup_schema(Schema()
                      .required("milestones", Type::IntList, "epochs at which the lr decays (counted after the warm-up)").min(1)
                      .add("gamma", Type::Float, yaml("0.1"), "multiplicative decay").above(0),
                  true),
    make_multistep_schedule);

}  // namespace trainrun
