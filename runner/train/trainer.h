// The training loop as a class, shaped like the Hugging Face Trainer: its state is named members
// (TrainerState: global step, epoch, micro-batches consumed, log history, best metric), its body
// fires the events of components/callbacks/callback.h and acts on what callbacks ask: it logs,
// evaluates and writes checkpoints when asked. Logging, when to evaluate and save, gradual
// unfreezing and the per-step agreement of the ranks are callbacks (runner/train/callbacks/).
#pragma once

#include "runner/distributed/accelerator.h"
#include "runner/train/checkpoints.h"
#include "runner/recipe/job.h"
#include "runner/recipe/preflight.h"
#include "runner/recipe/resume_plan.h"
#include "components/callbacks/callback.h"
#include "runner/train/evaluate.h"
#include "runner/train/loss_scaler.h"
#include "runner/train/optimization.h"
#include "support/errors.h"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

class DataLoader;
class DeviceLossSums;

AcceleratorOptions accelerator_options(const Job& job);

// The loader's options for the train (shuffled, padded DistributedSampler shard) or eval split.
LoaderOptions loader_options(const Job& job, bool train);

// The loop itself (what callbacks see of it: Trainer in components/callbacks/callback.h).
class TrainLoop final : public Trainer {
 public:
  // Joins the world, makes the run folder (rank 0), wraps the model (DDP), builds the loaders,
  // optimizer and scheduler; callbacks fire in the order given.
  TrainLoop(Job& job, const WorldInfo& world, std::vector<std::shared_ptr<Callback>> callbacks);
  ~TrainLoop();
  // Trains as the recipe says (resuming as output.resume says); returns the last evaluation.
  EvalResult train();

  Job& job() override { return job_; }
  Accelerator& accelerator() override { return *acc_; }
  bool is_main_process() const override { return acc_->is_main_process(); }
  int64_t rank() const override;
  int64_t world_size() const override;
  const std::string& output_dir() const override { return job_.config.output.dir; }
  const RunLength& length() const override { return length_; }
  TrainerState& state() override { return state_; }
  double epoch_progress() const override { return double(state_.global_step) / double(length_.steps_per_epoch); }
  const std::optional<std::string>& resumed_from() const override { return resumed_from_; }
  std::optional<double> grad_norm() const override { return grad_norm_; }
  Classifier& model() override;
  torch::optim::Optimizer& optimizer() override { return *opt_.optimizer; }
  TrainingParts parts() override;
  const LoopSums& loop_sums() override;
  at::Tensor take_nonfinite_loss() override;
  void add_trainable(const NamedParameters& params) override;
  EvalResult evaluate_model() override;
  const WorldInfo& world() const { return world_; }

 private:
  template <class Event>
  void fire(Event event) {
    for (auto& c : callbacks_) event(*c);
  }
  void resume();  // trainer_checkpoint.cpp, with what a save adds
  EvalResult run_loop();
  void run_epoch(int64_t epoch, int64_t skip);
  void hold_synthetic_batch(int64_t epoch, int64_t skip);
  std::optional<Batch> next_batch();
  bool forward_backward(const Batch& batch);  // true when the micro-batch closes a step
  void step(bool ends_epoch);
  void end_epoch();
  void log(const nlohmann::ordered_json& line);
  void log_training();
  void evaluate_now();
  void save_now();
  void write_checkpoint();
  std::string gather_loader_states();
  void restore_loader_state(const std::string& folder);
  void continue_on_this_world();
  [[noreturn]] void stop_now();
  EvalResult finish();
  void set_train_mode();
  void refresh_trainable();
  static double seconds_since(std::chrono::steady_clock::time_point t);

  Job& job_;
  WorldInfo world_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::unique_ptr<Accelerator> acc_;
  std::shared_ptr<DistributedModel> ddp_;
  std::unique_ptr<DataLoader> train_loader_, eval_loader_;
  std::optional<Batch> synthetic_;  // data.synthetic: the batch every step trains on
  RunLength length_;
  Optimization opt_;
  LossScaler scaler_;
  std::unique_ptr<Checkpoints> checkpoints_;  // when output.save_every is not never
  std::vector<at::Tensor> trainable_;
  std::optional<std::string> resumed_from_;
  std::string finished_;  // the run in the folder is over (runner/recipe/resume_plan.h): its line
  TrainerState state_;
  LoopSums sums_;
  std::unique_ptr<DeviceLossSums> device_sums_;
  TrainerControl control_;
  EvalResult last_eval_;
  std::optional<double> grad_norm_;
  std::optional<nlohmann::json> unsaved_eval_;  // the evaluation the next checkpoint is judged by
  int64_t checkpoint_step_ = -1, first_step_ = 0, session_examples_ = 0;
  // This rank's figures since the last training log line.
  struct LogWindow {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double data_wait = 0;  // seconds spent waiting for batches
    int64_t steps = 0, examples = 0;
  } window_;
  std::chrono::steady_clock::time_point start_;
};


}  // namespace trainrun
