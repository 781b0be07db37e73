// The training loop's events and the callbacks that listen to them, in the spirit of Hugging
// Face's TrainerCallback (and Lightning's Callback, Composer's Events). A callback reads the
// trainer's state (runner/train/trainer.h) and may ask it, through TrainerControl, to log,
// evaluate, save or stop; the loop acts on what was asked and knows no callback by name.
//
// Events, in the order a run fires them:
//   on_init_end        the trainer is built (world, run folder, model, loaders, optimizer)
//   on_resume          before a checkpoint's state loads (the optimizer must have its saved groups)
//   on_train_begin     after the banner, before the first epoch
//   on_epoch_begin     before the epoch's first batch (state().epoch_index is the epoch)
//   on_pre_optimizer_step  the micro-batches of a step are done, its optimizer step is next
//   on_step_end        after the optimizer step (state().global_step counts it)
//   on_log             a log line: training (loss, ...), evaluation (eval_*), the final summary
//   on_evaluate        after an evaluation (its line went to on_log first)
//   on_save            the trainer was asked to save (control.should_save)
//   on_epoch_end       after the epoch's last step
//   on_loop_end        after the last epoch (or a stop): ask for the final evaluation and save
//   on_train_end       the run is over (also when a signal stopped it); the summary follows
// Built-in callbacks: runner/train/callbacks/. Recipes add registered ones (`callbacks:`).
#pragma once

#include "registry/registry.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>

namespace trainrun {

class Trainer;
struct EvalResult;
struct TrainerState;

// What callbacks ask of the loop. The trainer acts at the next point where it can and clears
// the flag it acted on. Every rank must ask the same: decide from what every rank sees alike
// (the step, evaluation metrics, values reduced over ranks), or the world falls out of step.
struct TrainerControl {
  bool should_log = false;       // a training log line after this step (set before the optimizer step)
  bool should_evaluate = false;  // evaluate after this step / epoch
  bool should_save = false;      // a checkpoint after this step (at an epoch's last step: after its evaluation)
  // End training after this step. With stop_exit_code 0 the run ends as a finished one would
  // (on_loop_end, the final evaluation and save, the summary: an early stop); otherwise the
  // trainer saves as asked, every rank waits for the save, and the run exits with that code
  // (130 interrupted, 138 pre-empted) after on_train_end.
  bool should_training_stop = false;
  int stop_exit_code = 0;
  std::string stop_reason;  // e.g. "interrupted (Interrupt)"; the trainer adds " at step N"
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_init_end(Trainer&) {}
  virtual void on_resume(Trainer&, const TrainerState& saved) {}
  virtual void on_train_begin(Trainer&, TrainerControl&) {}
  virtual void on_epoch_begin(Trainer&, TrainerControl&) {}
  virtual void on_pre_optimizer_step(Trainer&, TrainerControl&) {}
  virtual void on_step_end(Trainer&, TrainerControl&) {}
  virtual void on_log(Trainer&, const nlohmann::ordered_json& line) {}
  virtual void on_evaluate(Trainer&, TrainerControl&, const EvalResult&, const nlohmann::ordered_json& line) {}
  virtual void on_save(Trainer&, TrainerControl&) {}
  virtual void on_epoch_end(Trainer&, TrainerControl&) {}
  virtual void on_loop_end(Trainer&, TrainerControl&) {}
  virtual void on_train_end(Trainer&, TrainerControl&) {}

  // State that must survive a resume (transformers' ExportableState): every checkpoint's
  // trainer_state.json holds it under `stateful_callbacks`, keyed by state_key() (transformers'
  // class name where it has one; a list where several callbacks share a key), as {"args": {...},
  // "attributes": {...}}; on resume each callback gets its own back, in the recipe's order, after
  // the checkpoint has loaded. An empty key: the callback has no state.
  virtual std::string state_key() const { return {}; }
  virtual nlohmann::ordered_json state() const { return nullptr; }
  virtual void load_state(Trainer&, const nlohmann::json& saved) {}
};

template <>
struct Kind<Callback> {
  static constexpr const char* name = "callbacks";
  using Factory = std::function<std::shared_ptr<Callback>(const Config&)>;
};

}  // namespace trainrun
