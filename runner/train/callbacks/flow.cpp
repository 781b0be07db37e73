// When to log and evaluate, as the Trainer's DefaultFlowCallback: a log line every
// train.log_every_steps steps, an evaluation every train.eval_every (steps or epoch), and a run
// that ends evaluated unless eval_every is never.
#include "runner/recipe/run_config.h"
#include "runner/train/callbacks/callbacks.h"

namespace trainrun {

namespace {

class Flow : public Callback {
 public:
  explicit Flow(TrainConfig train) : train_(std::move(train)) {}

  void on_train_begin(Trainer& t, TrainerControl&) override {
    const int64_t step = t.state().global_step;
    for (auto& l : t.state().log_history)
      if (l.contains("eval_loss") && l.value("step", int64_t(-1)) == step) evaluated_step_ = step;
  }
  void on_step_begin(Trainer& t, TrainerControl& control) override {
    control.should_log = (t.state().global_step + 1) % train_.log_every_steps == 0;  // grad_norm is measured then
  }
  void on_step_end(Trainer& t, TrainerControl& control) override {
    if (train_.eval_steps > 0 && t.state().global_step % train_.eval_steps == 0) control.should_evaluate = true;
  }
  void on_evaluate(Trainer& t, TrainerControl&, const EvalResult&, const nlohmann::ordered_json&) override {
    evaluated_step_ = t.state().global_step;
  }
  void on_epoch_end(Trainer&, TrainerControl& control) override {
    if (train_.eval_every == "epoch") control.should_evaluate = true;
  }
  void on_loop_end(Trainer& t, TrainerControl& control) override {
    if (train_.eval_every != "never" && evaluated_step_ != t.state().global_step) control.should_evaluate = true;
  }

 private:
  TrainConfig train_;
  int64_t evaluated_step_ = -1;
};

}  // namespace

std::shared_ptr<Callback> flow_callback(const TrainConfig& train) { return std::make_shared<Flow>(train); }

}  // namespace trainrun
