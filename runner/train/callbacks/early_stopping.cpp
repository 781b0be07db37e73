// `callbacks: [{name: early_stopping, ...}]`: the Hugging Face EarlyStoppingCallback. Training
// ends (as a finished run: last evaluation, checkpoint, summary) once `metric` has not improved
// by more than `threshold` for `patience` evaluations in a row. Evaluation metrics are reduced
// over ranks, so every rank decides alike.
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/trainer.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>

namespace trainrun {

namespace {

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(const Config& c)
      : metric_(c.get<std::string>("metric")), patience_(c.get<int64_t>("patience")),
        threshold_(c.get<double>("threshold")) {
    if (metric_.rfind("eval_", 0) != 0) metric_ = "eval_" + metric_;
    greater_is_better_ = metric_.find("loss") == std::string::npos;  // as the Trainer's metric_for_best_model
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

 private:
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
                      .add("metric", Type::String, yaml("eval_loss"), "the metric to watch (eval_ may be left out)")
                      .choices({"eval_loss", "eval_accuracy", "eval_top5", "loss", "accuracy", "top5"})
                      .add("patience", Type::Int, yaml("3"), "evaluations without improvement before stopping")
                      .min(1)
                      .add("threshold", Type::Float, yaml("0.0"), "smallest change that counts as an improvement")
                      .min(0),
                  [](const Config& c) { return std::make_shared<EarlyStopping>(c); });

}  // namespace trainrun
