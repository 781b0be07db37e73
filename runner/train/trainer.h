// The training loop as a class, shaped like the Hugging Face Trainer: its state is named members
// (TrainerState: global step, epoch, micro-batches consumed, log history, best metric), its body
// fires the events of runner/train/callback.h and acts on what callbacks ask. Logging,
// checkpoints, gradual unfreezing and the per-step agreement of the ranks are callbacks
// (runner/train/callbacks/).
#pragma once

#include "runner/distributed/accelerator.h"
#include "runner/io/checkpoint.h"
#include "runner/recipe/job.h"
#include "runner/recipe/preflight.h"
#include "runner/train/callback.h"
#include "runner/train/evaluate.h"
#include "runner/train/loss_scaler.h"
#include "runner/train/optimization.h"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

class DataLoader;
class DeviceLossSums;

// A failure after the run started (NaN loss, a broken file mid-epoch): exit code 1.
struct TrainingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failure every rank agreed on at the same step (a NaN loss on one of them): every rank exits
// 1, rank 0 reports it, so the user reads one line.
struct WorldFailure : TrainingError {
  using TrainingError::TrainingError;
};

// SIGINT / SIGTERM / SIGUSR1: every rank stopped after the same step and a checkpoint was saved:
// exit 130 (interrupted) or 138 (pre-empted by SIGUSR1; a scheduler may requeue and resume).
struct TrainingInterrupted : std::runtime_error {
  TrainingInterrupted(const std::string& what, int exit_code) : std::runtime_error(what), exit_code(exit_code) {}
  int exit_code;
};

AcceleratorOptions accelerator_options(const Job& job);

// The loader's options for the train (shuffled, padded DistributedSampler shard) or eval split.
LoaderOptions loader_options(const Job& job, bool train);

class Trainer {
 public:
  // Joins the world, makes the run folder (rank 0), wraps the model (DDP), builds the loaders,
  // optimizer and scheduler; callbacks fire in the order given.
  Trainer(Job& job, const WorldInfo& world, std::vector<std::shared_ptr<Callback>> callbacks);
  ~Trainer();
  // Trains as the recipe says (resuming as output.resume says); returns the last evaluation.
  EvalResult train();

  // For callbacks: what the run is.
  Job& job() { return job_; }
  const WorldInfo& world() const { return world_; }
  Accelerator& accelerator() { return *acc_; }
  bool is_main_process() const { return acc_->is_main_process(); }
  const std::string& output_dir() const { return job_.config.output.dir; }
  const RunLength& length() const { return length_; }
  // Where it stands: global_step, epoch_index, batches_in_epoch (micro-batches of the epoch
  // consumed), log_history, best_metric, ...; the Trainer's fractional epoch.
  TrainerState& state() { return state_; }
  double epoch_progress() const { return double(state_.global_step) / double(length_.steps_per_epoch); }
  const std::optional<std::string>& resumed_from() const { return resumed_from_; }
  // What it trains with.
  Classifier& model();
  TrainingParts parts();
  const LoopSums& loop_sums();       // this rank's loss sums (a host read)
  at::Tensor take_nonfinite_loss();  // last nan/inf micro-batch loss since the last call (device scalar, 0 if none)

  // For callbacks: parameters that start training mid-run join the running optimizer as
  // torch's add_param_group does; the scheduler sets their lr; DDP is rebuilt over the new set.
  void add_trainable(const NamedParameters& params);
  // A callback wrote a checkpoint of the current step (the stop message says so).
  void record_checkpoint() { checkpoint_step_ = state_.global_step; }

 private:
  template <class Event>
  void fire(Event event) {
    for (auto& c : callbacks_) event(*c);
  }
  void resume();
  void run_epoch(int64_t epoch, int64_t skip);
  bool forward_backward(const Batch& batch);  // true when the micro-batch closes a step
  void step(bool ends_epoch);
  void end_epoch();
  void log(const nlohmann::ordered_json& line);
  void log_training(double grad_norm);
  void evaluate_now();
  void save_now();
  [[noreturn]] void stop_now();
  EvalResult finish();
  void set_train_mode();
  void refresh_trainable();

  Job& job_;
  WorldInfo world_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::unique_ptr<Accelerator> acc_;
  std::shared_ptr<DistributedModel> ddp_;
  std::unique_ptr<DataLoader> train_loader_, eval_loader_;
  RunLength length_;
  Optimization opt_;
  LossScaler scaler_;
  std::vector<at::Tensor> trainable_;
  std::optional<std::string> resumed_from_;
  bool ended_early_ = false;  // the checkpoint resumed from is of a run a callback ended
  TrainerState state_;
  LoopSums sums_;
  std::unique_ptr<DeviceLossSums> device_sums_;
  TrainerControl control_;
  EvalResult last_eval_;
  int64_t checkpoint_step_ = -1, first_step_ = 0, session_examples_ = 0;
  // This rank's figures since the last training log line.
  struct LogWindow {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double data_wait = 0;  // seconds spent waiting for batches
    int64_t steps = 0, examples = 0;
  } window_;
  std::chrono::steady_clock::time_point start_;
};

// Trains as the recipe says, as one rank of `world`, with the built-in callbacks and the
// recipe's `callbacks:`; rank 0 writes the run folder. Returns the last evaluation.
EvalResult train(Job& job, const WorldInfo& world);

}  // namespace trainrun
