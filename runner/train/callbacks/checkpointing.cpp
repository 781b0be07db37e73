// Checkpoints as a callback: when to save (output.save_every: every epoch, every N steps, never;
// always at the end and when a stop asks), what (checkpoint-N with the evaluation since the last
// save, for checkpoint-best) and rotation (output.keep_last; never the one resumed from).
#include "runner/io/checkpoint.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace trainrun {

namespace {

class Checkpointing : public Callback {
 public:
  explicit Checkpointing(CheckpointOptions options) : options_(std::move(options)) {}

  void on_init_end(Trainer& t) override { store_ = std::make_unique<Checkpoints>(options_, t.accelerator()); }
  void on_train_begin(Trainer& t, TrainerControl&) override {
    if (!t.resumed_from()) return;
    last_saved_ = t.state().global_step;
    store_->keep(*t.resumed_from());
  }
  void on_step_end(Trainer& t, TrainerControl& control) override {
    const int64_t every = options_.save_steps();
    if (every > 0 && t.state().global_step % every == 0) control.should_save = true;
  }
  void on_epoch_end(Trainer&, TrainerControl& control) override {
    if (options_.save_every == "epoch") control.should_save = true;
  }
  void on_loop_end(Trainer&, TrainerControl& control) override { control.should_save = true; }
  void on_evaluate(Trainer&, TrainerControl&, const EvalResult&, const nlohmann::ordered_json& line) override {
    unsaved_eval_ = line;
  }
  void on_save(Trainer& t, TrainerControl&) override {
    TrainerState& state = t.state();
    if (!options_.enabled() || last_saved_ == state.global_step) return;
    state.epoch = double(state.epoch_index) + double(state.batches_in_epoch) / double(t.length().batches_per_epoch);
    auto began = std::chrono::steady_clock::now();
    std::string folder = store_->save(t.parts(), state, t.loop_sums(), unsaved_eval_);
    unsaved_eval_.reset();
    last_saved_ = state.global_step;
    t.record_checkpoint();
    if (t.is_main_process())
      spdlog::info("Saving model checkpoint to {} ({:.2f} s)", folder,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }

 private:
  CheckpointOptions options_;
  std::unique_ptr<Checkpoints> store_;
  int64_t last_saved_ = -1;
  std::optional<nlohmann::json> unsaved_eval_;  // the evaluation the next checkpoint is judged by
};

}  // namespace

std::shared_ptr<Callback> checkpoint_callback(const CheckpointOptions& output) {
  return std::make_shared<Checkpointing>(output);
}

}  // namespace trainrun
