// When to save, as a callback (output.save_every: every epoch, every N steps, never; always at the
// end and when a stop asks). The trainer writes the checkpoint (runner/train/checkpoints.h:
// checkpoint-N with the evaluation since the last save for checkpoint-best, rotation by
// output.keep_last, never the one resumed from).
#include "runner/io/checkpoint.h"
#include "runner/train/callbacks/callbacks.h"

namespace trainrun {

namespace {

class SaveFlow : public Callback {
 public:
  explicit SaveFlow(CheckpointOptions options) : options_(std::move(options)) {}

  void on_step_end(Trainer& t, TrainerControl& control) override {
    const int64_t every = options_.save_steps();
    if (every > 0 && t.state().global_step % every == 0) control.should_save = true;
  }
  void on_epoch_end(Trainer&, TrainerControl& control) override {
    if (options_.save_every == "epoch") control.should_save = true;
  }
  void on_loop_end(Trainer&, TrainerControl& control) override { control.should_save = true; }

 private:
  CheckpointOptions options_;
};

}  // namespace

std::shared_ptr<Callback> checkpoint_callback(const CheckpointOptions& output) {
  return std::make_shared<SaveFlow>(output);
}

}  // namespace trainrun
