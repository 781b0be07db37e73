// `callbacks: [{name: early_stopping, ...}]`: the Hugging Face EarlyStoppingCallback. Training
// ends (as a finished run: last evaluation, checkpoint, summary) once `metric` has not improved
// by more than `threshold` for `patience` evaluations in a row. Evaluation metrics are reduced
// over ranks, so every rank decides alike. Its state (the strikes so far and the best value) is
// saved with every checkpoint as transformers' EarlyStoppingCallback saves it, so a resumed run
// stops where the uninterrupted one does.
#include "runner/recipe/job.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/evaluate.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>

namespace trainrun {

namespace {

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(const Config& c)
      : key_(c.path() + ".metric"), metric_(evaluation_metric_name(c.get<std::string>("metric"))),
        patience_(c.get<int64_t>("patience")), threshold_(c.get<double>("threshold")) {
    greater_is_better_ = metric_.find("loss") == std::string::npos;  // as the Trainer's metric_for_best_model
  }

  void check(const Job& job) const override {
    if (std::string why = unevaluated_metric(job.config.train, metric_); !why.empty()) throw RecipeError(key_ + ": " + why);
  }

  void on_evaluate(Trainer& t, TrainerControl& control, const EvalResult& r, const nlohmann::ordered_json&) override {
    const double v = r.metrics.at(metric_);
    const bool better = !best_ || (greater_is_better_ ? v > *best_ : v < *best_);
    if (better && (!best_ || std::abs(v - *best_) > threshold_)) {
      best_ = v;
      evaluations_without_gain_ = 0;
      return;
    }
    if (++evaluations_without_gain_ < patience_) return;
    control.should_training_stop = true;
    spdlog::info("Early stopping at step {}: {} has not improved on {} for {} evaluation{}", t.state().global_step,
                 metric_, *best_, patience_, patience_ > 1 ? "s" : "");
  }

  // transformers' names (its `args` are the constructor's, its counter an attribute), plus ours:
  // the metric and the best value so far (transformers reads that from TrainerState.best_metric,
  // which follows metric_for_best_model; this callback watches a metric of its own).
  std::string state_key() const override { return "EarlyStoppingCallback"; }
  nlohmann::ordered_json state() const override {
    return {{"args", {{"early_stopping_patience", patience_}, {"early_stopping_threshold", threshold_}, {"metric", metric_}}},
            {"attributes",
             {{"best_value", best_ ? nlohmann::ordered_json(*best_) : nlohmann::ordered_json(nullptr)},
              {"early_stopping_patience_counter", evaluations_without_gain_}}}};
  }
  // The recipe's args stand (a resumed run may change them); the count and the best value
  // continue, unless the metric watched is another one now.
  void load_state(Trainer&, const nlohmann::json& saved) override {
    const nlohmann::json& a = saved.at("attributes");
    if (saved.at("args").value("metric", metric_) != metric_) {
      spdlog::warn("early_stopping: the checkpoint counted {}, this run watches {}: its count starts afresh",
                   saved["args"]["metric"].get<std::string>(), metric_);
      return;
    }
    evaluations_without_gain_ = a.at("early_stopping_patience_counter").get<int64_t>();
    best_.reset();
    if (!a.at("best_value").is_null()) best_ = a["best_value"].get<double>();
  }

 private:
  std::string key_;  // callbacks[i].metric, for errors
  std::string metric_;
  int64_t patience_;
  double threshold_;
  bool greater_is_better_ = false;
  std::optional<double> best_;
  int64_t evaluations_without_gain_ = 0;
};

}  // namespace

TRAINRUN_REGISTER(Callback, "early_stopping",
                  "stop when an evaluation metric stops improving (transformers' EarlyStoppingCallback)",
                  Schema()
                      .add("metric", Type::String, yaml("eval_loss"),
                           "the metric to watch (eval_ may be left out; eval_ema_* with train.ema)")
                      .choices(evaluation_metric_choices())
                      .add("patience", Type::Int, yaml("3"), "evaluations without improvement before stopping")
                      .min(1)
                      .add("threshold", Type::Float, yaml("0.0"), "smallest change that counts as an improvement")
                      .min(0),
                  [](const Config& c) { return std::make_shared<EarlyStopping>(c); });

}  // namespace trainrun
