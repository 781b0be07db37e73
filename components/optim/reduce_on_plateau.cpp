// reduce_on_plateau: torch.optim.lr_scheduler.ReduceLROnPlateau deciding from an evaluation
// metric. After each evaluation (Scheduler::observe): the metric counts as better than the best
// so far when below best * (1 - threshold) (mode min, threshold_mode rel), best - threshold (min,
// abs), best * (1 + threshold) (max, rel) or best + threshold (max, abs); more than `patience`
// evaluations in a row without that multiply every group's lr by `factor`, not below min_lr and
// only where the change exceeds eps; `cooldown` evaluations after a reduction count no bad ones.
// The lr stays put between evaluations. Its state (best, num_bad_epochs, cooldown_counter,
// last_epoch and every group's lr) goes into scheduler.json, so a resumed run decides as the
// uninterrupted one. No warm-up: torch's SequentialLR does not take ReduceLROnPlateau, nor does
// transformers' reduce_lr_on_plateau warm up.
#include "components/optim/optim.h"

#include <torch/optim.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace trainrun {
namespace {

struct PlateauOptions {
  std::string metric = "eval_loss";
  bool max = false;  // mode
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  bool relative = true;  // threshold_mode rel, else abs
  int64_t cooldown = 0;
  double min_lr = 0;
  double eps = 1e-8;
};

class ReduceOnPlateau : public Scheduler {
 public:
  ReduceOnPlateau(torch::optim::Optimizer& opt, PlateauOptions o) : Scheduler(opt), optimizer_(opt), o_(std::move(o)) {
    best_ = worst();
  }

  bool observes_evaluations() const override { return true; }

  void observe(const std::map<std::string, double>& eval_metrics) override {
    auto it = eval_metrics.find(o_.metric);
    if (it == eval_metrics.end())
      throw std::invalid_argument("scheduler.metric: the evaluation gave no " + o_.metric);
    const double current = it->second;
    ++last_epoch_;
    if (better(current)) {
      best_ = current;
      num_bad_epochs_ = 0;
    } else {
      ++num_bad_epochs_;
    }
    if (cooldown_counter_ > 0) {
      --cooldown_counter_;
      num_bad_epochs_ = 0;
    }
    if (num_bad_epochs_ > o_.patience) {
      reduce();
      cooldown_counter_ = o_.cooldown;
      num_bad_epochs_ = 0;
    }
  }

 protected:
  double lr(int64_t, double base_lr) const override { return base_lr; }
  double group_lr(int64_t, std::size_t group, double base_lr) const override {
    return group < lrs_.size() ? lrs_[group] : base_lr;
  }

  void save_more(nlohmann::json& s) const override {
    // JSON has no infinity: the best before any evaluation is null.
    s["best"] = std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json(nullptr);
    s["num_bad_epochs"] = num_bad_epochs_;
    s["cooldown_counter"] = cooldown_counter_;
    s["last_epoch"] = last_epoch_;
    s["lrs"] = lrs_;
  }

  void load_more(const nlohmann::json& s) override {
    auto integer = [&](const char* key) {
      if (!s.contains(key) || !s[key].is_number_integer() || s[key].get<int64_t>() < 0)
        throw std::invalid_argument(std::string("scheduler state: reduce_on_plateau needs \"") + key + "\": int >= 0");
      return s[key].get<int64_t>();
    };
    if (!s.contains("best") || !(s["best"].is_null() || s["best"].is_number()))
      throw std::invalid_argument("scheduler state: reduce_on_plateau needs \"best\": number or null");
    if (!s.contains("lrs") || !s["lrs"].is_array())
      throw std::invalid_argument("scheduler state: reduce_on_plateau needs \"lrs\": [float, ...]");
    std::vector<double> lrs;
    for (const auto& v : s["lrs"]) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        throw std::invalid_argument("scheduler state: lrs holds " + v.dump() + ", expected learning rates >= 0");
      lrs.push_back(v.get<double>());
    }
    num_bad_epochs_ = integer("num_bad_epochs");
    cooldown_counter_ = integer("cooldown_counter");
    last_epoch_ = integer("last_epoch");
    best_ = s["best"].is_null() ? worst() : s["best"].get<double>();
    lrs_ = std::move(lrs);
  }

 private:
  double worst() const { return o_.max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(); }

  bool better(double a) const {
    if (!o_.max && o_.relative) return a < best_ * (1. - o_.threshold);
    if (!o_.max) return a < best_ - o_.threshold;
    if (o_.relative) return a > best_ * (o_.threshold + 1.);
    return a > best_ + o_.threshold;
  }

  // torch's _reduce_lr: from each group's current lr.
  void reduce() {
    auto& groups = optimizer_.param_groups();
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      if (lrs_.size() <= i) lrs_.push_back(old_lr);
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
      if (old_lr - new_lr > o_.eps) lrs_[i] = new_lr;
    }
    reapply();
  }

  torch::optim::Optimizer& optimizer_;
  PlateauOptions o_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> lrs_;  // each group's lr once reduced; empty before the first reduction
};

std::shared_ptr<Scheduler> make_reduce_on_plateau(const Config& c, const ScheduleContext& ctx) {
  PlateauOptions o;
  o.metric = c.get<std::string>("metric");
  if (o.metric.rfind("eval_", 0) != 0) o.metric = "eval_" + o.metric;
  o.max = c.is_null("mode") ? o.metric.find("loss") == std::string::npos : c.get<std::string>("mode") == "max";
  o.factor = c.get<double>("factor");
  o.patience = c.get<int64_t>("patience");
  o.threshold = c.get<double>("threshold");
  o.relative = c.get<std::string>("threshold_mode") == "rel";
  o.cooldown = c.get<int64_t>("cooldown");
  o.min_lr = c.get<double>("min_lr");
  o.eps = c.get<double>("eps");
  return std::make_shared<ReduceOnPlateau>(*ctx.optimizer, o);
}

}  // namespace

TRAINRUN_REGISTER(
    Scheduler, "reduce_on_plateau",
    "multiply the lr by factor when an evaluation metric stops improving (torch.optim.lr_scheduler.ReduceLROnPlateau); "
    "decides after each evaluation",
    Schema()
        .add("metric", Type::String, yaml("eval_loss"), "the evaluation metric to watch (eval_ may be left out)")
        // The evaluation's metrics (runner/recipe's evaluation_metric_choices without the EMA's;
        // ScheduleCli checks that the lists agree), of either task: the job refuses the other task's.
        .choices({"eval_loss", "eval_accuracy", "eval_top5", "eval_f1_macro", "eval_balanced_accuracy", "eval_map",
                  "eval_map_micro", "eval_f1_micro", "eval_f1_samples", "eval_precision", "eval_recall", "loss",
                  "accuracy", "top5", "f1_macro", "balanced_accuracy", "map", "map_micro", "f1_micro", "f1_samples",
                  "precision", "recall"})
        .add("mode", Type::String, yaml("null"), "min or max; null = min for a loss, max otherwise").nullable().choices({"min", "max"})
        .add("factor", Type::Float, yaml("0.1"), "new lr = lr * factor").above(0).below(1)
        .add("patience", Type::Int, yaml("10"), "evaluations without improvement tolerated before a reduction").min(0)
        .add("threshold", Type::Float, yaml("1e-4"), "smallest change that counts as an improvement").min(0)
        .add("threshold_mode", Type::String, yaml("rel"), "threshold relative to the best value, or absolute").choices({"rel", "abs"})
        .add("cooldown", Type::Int, yaml("0"), "evaluations to wait after a reduction before counting again").min(0)
        .add("min_lr", Type::Float, yaml("0.0"), "lower bound on every group's lr").min(0)
        .add("eps", Type::Float, yaml("1e-8"), "a reduction smaller than this is skipped").min(0),
    make_reduce_on_plateau);

}  // namespace trainrun
