// The training loop's events and the callbacks that listen to them, in the spirit of Hugging
// Face's TrainerCallback (and Lightning's Callback, Composer's Events). This header is all a
// callback needs: what a callback sees of the run (Trainer), what it may ask (TrainerControl) and
// the events. A callback reads the trainer's state and may ask it to log, evaluate, save or stop;
// the loop acts on what was asked and knows no callback by name.
//
// Events, in the order a run fires them (Hugging Face's names where it has one, Lightning's
// where it does not):
//   check(job)         before anything starts (`trainrun check`, a run's preflight): refuse the job
//   on_init_end        the trainer is built (world, run folder, model, loaders, optimizer)
//   on_resume          before a checkpoint's state loads (the optimizer must have its saved groups)
//   on_train_begin     after the banner, before the first epoch
//   on_epoch_begin     before the epoch's first batch (state().epoch_index is the epoch)
//   on_step_begin      before the first micro-batch of an optimizer step
//   per micro-batch:
//     on_train_batch_begin  the batch is on the device; the callback may replace inputs and
//                           targets (mixup: soft targets of shape [N, classes])
//     on_before_backward    outputs and loss are computed; the callback may change the loss
//     on_after_backward     this micro-batch's gradients are accumulated (not yet reduced
//                           across ranks on accumulation micro-steps, unscaled under fp16)
//   on_pre_optimizer_step  gradients unscaled and clipped (grad_norm() measured when clipping
//                          or logging); the optimizer step is next
//   on_optimizer_step  after the optimizer and scheduler stepped, before the gradients are zeroed
//   on_step_end        after the optimizer step (state().global_step counts it)
//   on_log             a log line: training (loss, ...), evaluation (eval_*), the final summary
//   on_evaluate_begin  an evaluation is next (the model is switched to eval mode after it)
//   on_evaluation_metrics  the evaluation ran; a callback may add metrics to it (the EMA
//                      weights' eval_ema_*), which its log line, checkpoint-best and early
//                      stopping then see
//   on_evaluate        after an evaluation (its line went to on_log first)
//   on_save_checkpoint a checkpoint is being written: add files to it (every rank is called;
//                      rank 0 writes)
//   on_save            after the checkpoint is written (state().best_model_checkpoint updated)
//   on_epoch_end       after the epoch's last step
//   on_loop_end        after the last epoch (or a stop): ask for the final evaluation and save
//   on_train_end       the run is over (also when a signal stopped it); the summary follows
//   on_exception       training failed (the error is thrown on after every callback saw it)
// Built-in callbacks: runner/train/callbacks/. Recipes add registered ones (`callbacks:`).
#pragma once

#include "components/callbacks/trainer_state.h"
#include "registry/registry.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <exception>
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

class Accelerator;       // runner/distributed/accelerator.h: the world (rank, collectives, device)
class Classifier;        // components/models/model.h
struct EvalResult;       // runner/train/evaluate.h
struct Job;              // runner/recipe/job.h: the built recipe
struct TrainingParts;    // runner/train/checkpoints.h: model, optimizer, scheduler, loss scaler

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

// One micro-batch of training, on the device. `targets` are class indices [N] (int64) or, after
// a callback or batch transform mixed them, probabilities [N, classes] (float), which the
// losses take as torch.nn.functional.cross_entropy does.
struct TrainBatch {
  at::Tensor inputs;
  at::Tensor targets;
  int64_t index_in_epoch = 0;  // 0-based micro-batch index in the epoch
};

// What the forward pass gave: the model's outputs (fp32) and the loss of the micro-batch (before
// the division by grad_accum_steps and the fp16 loss scale).
struct StepOutput {
  at::Tensor outputs;
  at::Tensor loss;
};

// Files a callback adds to the checkpoint being written (name -> bytes; a plain file name in the
// checkpoint folder, written durably before trainer_state.json marks the folder complete).
// On resume, read them from Trainer::resumed_from().
class CheckpointFiles {
 public:
  void add(const std::string& name, std::string bytes);
  const std::map<std::string, std::string>& files() const { return files_; }

 private:
  std::map<std::string, std::string> files_;
};

// What a callback sees of the run and may do with it. Every rank has one.
class Trainer {
 public:
  // What the run is.
  virtual Job& job() = 0;
  virtual Accelerator& accelerator() = 0;
  virtual bool is_main_process() const = 0;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  virtual const std::string& output_dir() const = 0;
  virtual const RunLength& length() const = 0;
  // Where it stands: global_step, epoch_index, batches_in_epoch (micro-batches of the epoch
  // consumed), log_history, best_metric, ...; the Trainer's fractional epoch; the checkpoint
  // this run resumed from; the gradients' global L2 norm before clipping, from
  // on_pre_optimizer_step to the next step's (measured when clipping or logging, else nullopt).
  virtual TrainerState& state() = 0;
  virtual double epoch_progress() const = 0;
  virtual const std::optional<std::string>& resumed_from() const = 0;
  virtual std::optional<double> grad_norm() const = 0;
  // What it trains with: the model (unwrapped from DDP), the optimizer, all of it for a
  // checkpoint; this rank's loss sums (a host read); the last nan/inf micro-batch loss since the
  // last call (a device scalar, 0 if none).
  virtual Classifier& model() = 0;
  virtual torch::optim::Optimizer& optimizer() = 0;
  virtual TrainingParts parts() = 0;
  virtual const LoopSums& loop_sums() = 0;
  virtual at::Tensor take_nonfinite_loss() = 0;
  // Parameters that start training mid-run join the running optimizer as torch's add_param_group
  // does; the scheduler sets their lr; DDP is rebuilt over the new set.
  virtual void add_trainable(const std::vector<std::pair<std::string, at::Tensor>>& params) = 0;
  // One evaluation of the model as its weights are now (every rank must call it: the metrics
  // are reduced over ranks); the model is in eval mode afterwards.
  virtual EvalResult evaluate_model() = 0;

 protected:
  ~Trainer() = default;
};

class Callback {
 public:
  virtual ~Callback() = default;
  // Before anything starts (`trainrun check`, a run's preflight, each of which makes the recipe's
  // callbacks once to ask, so a constructor only reads its Config): refuse what the recipe asks of
  // this callback that the job cannot give (a metric its evaluations do not report), with a
  // RecipeError naming the key, so the run is exit 2 with nothing written.
  virtual void check(const Job&) const {}
  virtual void on_init_end(Trainer&) {}
  virtual void on_resume(Trainer&, const TrainerState& saved) {}
  virtual void on_train_begin(Trainer&, TrainerControl&) {}
  virtual void on_epoch_begin(Trainer&, TrainerControl&) {}
  virtual void on_step_begin(Trainer&, TrainerControl&) {}
  virtual void on_train_batch_begin(Trainer&, TrainBatch&) {}
  virtual void on_before_backward(Trainer&, const TrainBatch&, StepOutput&) {}
  virtual void on_after_backward(Trainer&, const TrainBatch&) {}
  virtual void on_pre_optimizer_step(Trainer&, TrainerControl&) {}
  virtual void on_optimizer_step(Trainer&, TrainerControl&) {}
  virtual void on_step_end(Trainer&, TrainerControl&) {}
  virtual void on_log(Trainer&, const nlohmann::ordered_json& line) {}
  virtual void on_evaluate_begin(Trainer&, TrainerControl&) {}
  virtual void on_evaluation_metrics(Trainer&, EvalResult&) {}
  virtual void on_evaluate(Trainer&, TrainerControl&, const EvalResult&, const nlohmann::ordered_json& line) {}
  virtual void on_save_checkpoint(Trainer&, CheckpointFiles&) {}
  virtual void on_save(Trainer&, TrainerControl&) {}
  virtual void on_epoch_end(Trainer&, TrainerControl&) {}
  virtual void on_loop_end(Trainer&, TrainerControl&) {}
  virtual void on_train_end(Trainer&, TrainerControl&) {}
  virtual void on_exception(Trainer&, const std::exception&) {}

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
  static constexpr const char* singular = "callback";  // in messages: "unknown callback 'x'"
  using Factory = std::function<std::shared_ptr<Callback>(const Config&)>;
};

}  // namespace trainrun
