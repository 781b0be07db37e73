// transformers' schedules (src/transformers/optimization.py, huggingface/transformers
// 005edacb6b5dabbf0843e92c6623de9e07ca6241): LambdaLR lambdas over the whole run, warm-up
// included, multiplying each group's initial lr. The warm-up part, step / max(1, warmup_steps)
// from 0, is the Scheduler base's (Warmup{steps, 0, shift = false}); these give the rest.
// - linear: get_linear_schedule_with_warmup, down to 0 at the run's last step;
// - polynomial: get_polynomial_decay_schedule_with_warmup, (lr - lr_end) * remaining^power + lr_end,
//   lr_end absolute against the optimizer's lr (optimizer.defaults["lr"]), each group scaled by its
//   lr over that; lr_end after the run;
// - cosine_with_restarts: get_cosine_with_hard_restarts_schedule_with_warmup, num_cycles cosines
//   from the lr to 0, each restarting at the lr.
#include "components/optim/optim.h"

#include <torch/optim.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace trainrun {
namespace {

class LinearDecay : public Scheduler {
 public:
  LinearDecay(torch::optim::Optimizer& opt, int64_t total, Warmup warmup)
      : Scheduler(opt, warmup), total_(total), warmup_steps_(warmup.steps) {}

 protected:
  double lr(int64_t step, double base_lr) const override {
    return base_lr *
           std::max(0.0, double(total_ - step) / double(std::max<int64_t>(1, total_ - warmup_steps_)));
  }

 private:
  int64_t total_, warmup_steps_;
};

class PolynomialDecay : public Scheduler {
 public:
  PolynomialDecay(torch::optim::Optimizer& opt, int64_t total, Warmup warmup, double lr_init, double lr_end, double power)
      : Scheduler(opt, warmup), total_(total), warmup_steps_(warmup.steps), lr_init_(lr_init), lr_end_(lr_end), power_(power) {}

 protected:
  double lr(int64_t step, double base_lr) const override {
    if (step > total_) return base_lr * (lr_end_ / lr_init_);
    const double lr_range = lr_init_ - lr_end_;
    const double decay_steps = double(total_ - warmup_steps_);
    const double pct_remaining = 1 - double(step - warmup_steps_) / decay_steps;
    const double decay = lr_range * std::pow(pct_remaining, power_) + lr_end_;
    return base_lr * (decay / lr_init_);
  }

 private:
  int64_t total_, warmup_steps_;
  double lr_init_, lr_end_, power_;
};

class CosineWithRestarts : public Scheduler {
 public:
  CosineWithRestarts(torch::optim::Optimizer& opt, int64_t total, Warmup warmup, int64_t num_cycles)
      : Scheduler(opt, warmup), total_(total), warmup_steps_(warmup.steps), num_cycles_(num_cycles) {}

 protected:
  double lr(int64_t step, double base_lr) const override {
    const double progress = double(step - warmup_steps_) / double(std::max<int64_t>(1, total_ - warmup_steps_));
    if (progress >= 1.0) return base_lr * 0.0;
    // Python's % of two non-negative floats is fmod.
    return base_lr * std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * std::fmod(double(num_cycles_) * progress, 1.0))));
  }

 private:
  int64_t total_, warmup_steps_, num_cycles_;
};

std::string show_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::shared_ptr<Scheduler> make_linear_schedule(const Config& c, const ScheduleContext& ctx) {
  return std::make_shared<LinearDecay>(*ctx.optimizer, ctx.total_steps, warmup_of(c, ctx, false));
}

std::shared_ptr<Scheduler> make_polynomial_schedule(const Config& c, const ScheduleContext& ctx) {
  const Warmup w = warmup_of(c, ctx, false);
  // transformers' lr_init is optimizer.defaults["lr"]: the recipe's optimizer.lr.
  const double lr_init = ctx.optimizer_lr > 0 ? ctx.optimizer_lr : current_lr(*ctx.optimizer);
  const double lr_end = c.get<double>("lr_end");
  if (!(lr_init > lr_end))
    throw std::invalid_argument(c.path() + ".lr_end: " + show_number(lr_end) + " must be smaller than optimizer.lr " +
                                show_number(lr_init) + " (transformers raises here too)");
  if (w.steps >= ctx.total_steps)
    throw std::invalid_argument(c.path() + ".warmup_steps: a warm-up of " + std::to_string(w.steps) +
                                " steps leaves no step for the decay (the run has " + std::to_string(ctx.total_steps) +
                                " optimizer steps)");
  return std::make_shared<PolynomialDecay>(*ctx.optimizer, ctx.total_steps, w, lr_init, lr_end, c.get<double>("power"));
}

std::shared_ptr<Scheduler> make_cosine_with_restarts_schedule(const Config& c, const ScheduleContext& ctx) {
  return std::make_shared<CosineWithRestarts>(*ctx.optimizer, ctx.total_steps, warmup_of(c, ctx, false),
                                              c.get<int64_t>("num_cycles"));
}

}  // namespace

TRAINRUN_REGISTER(Scheduler, "linear",
                  "linear decay to 0 at the end of the run after a linear warm-up from 0 "
                  "(transformers' get_linear_schedule_with_warmup)",
                  warmup_schema(Schema(), false), make_linear_schedule);

TRAINRUN_REGISTER(Scheduler, "polynomial",
                  "polynomial decay to lr_end at the end of the run after a linear warm-up from 0 "
                  "(transformers' get_polynomial_decay_schedule_with_warmup)",
                  warmup_schema(Schema()
                                    .add("lr_end", Type::Float, yaml("1e-7"), "the lr at the end of the run (absolute; < optimizer.lr)").min(0)
                                    .add("power", Type::Float, yaml("1.0"), "power of the decay (1 = linear)").above(0),
                                false),
                  make_polynomial_schedule);

TRAINRUN_REGISTER(Scheduler, "cosine_with_restarts",
                  "num_cycles cosine decays to 0, each restarting at the lr, after a linear warm-up from 0 "
                  "(transformers' get_cosine_with_hard_restarts_schedule_with_warmup)",
                  warmup_schema(Schema().add("num_cycles", Type::Int, yaml("1"), "number of hard restarts (cosine cycles)").min(1),
                                false),
                  make_cosine_with_restarts_schedule);

}  // namespace trainrun
