// Checkpoints in Hugging Face Trainer's layout (SPEC §4): output.dir/checkpoint-<global_step>/
// holding model.safetensors, optimizer.pt, scheduler.json, scaler.json, rng.pt and
// trainer_state.json. A folder is written as .checkpoint-<step>.tmp, every file fsynced, then
// renamed, so a checkpoint-<step> folder is always complete; trainer_state.json is written last
// and is what marks a folder as resumable. checkpoint-best is a symlink to the best one.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace trainrun {

class Accelerator;
class Classifier;
class LossScaler;
class Scheduler;

// A checkpoint that cannot be written (full disk, unwritable folder) or read: exit code 1.
// Older checkpoints are left as they were.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The `output` section's checkpoint keys.
struct CheckpointOptions {
  std::string dir;
  std::string save_every = "epoch";  // epoch | N optimizer steps | never
  std::optional<int64_t> keep_last = 3;  // nullopt = keep all
  std::string best_metric;           // eval_loss, eval_accuracy, ...; empty = none
  bool greater_is_better = false;    // inferred from the name, as the Trainer does
  std::string resume = "auto";       // auto | never | PATH

  static CheckpointOptions from(const YAML::Node& output);
  bool enabled() const { return save_every != "never"; }
  int64_t save_steps() const;  // 0 unless save_every is a number
};

// Per-rank sums the loop carries between log lines and to the end-of-training summary.
struct LoopSums {
  double loss_since_log = 0;
  int64_t batches_since_log = 0;
  double loss_total = 0;
  int64_t batches_total = 0;
};

// trainer_state.json: the Trainer's field names, plus what trainrun needs to continue exactly
// (`trainrun`: the epoch in progress, the micro-batches of it already consumed, every rank's
// loop sums).
struct TrainerState {
  int64_t global_step = 0;
  double epoch = 0;  // fractional, as the Trainer's
  int64_t max_steps = 0, num_train_epochs = 0, logging_steps = 0, eval_steps = 0, save_steps = 0;
  int64_t train_batch_size = 0;
  std::optional<double> best_metric;
  std::string best_model_checkpoint;
  nlohmann::ordered_json log_history = nlohmann::ordered_json::array();
  int64_t epoch_index = 0;       // epoch in progress (0-based)
  int64_t batches_in_epoch = 0;  // micro-batches of it consumed, on every rank
  int64_t world_size = 1;
  std::vector<LoopSums> ranks;

  nlohmann::ordered_json to_json() const;
  static TrainerState from_json(const nlohmann::json& j);
};

// A checkpoint folder's trainer_state.json (CheckpointError naming the file when unreadable).
TrainerState read_trainer_state(const std::string& folder);

// What a checkpoint restores besides the loop state.
struct TrainingParts {
  Classifier& model;
  torch::optim::Optimizer& optimizer;
  Scheduler& scheduler;
  LossScaler& scaler;
};

// Checks output.resume before anything starts: a PATH that is not a complete checkpoint is a
// bad input (RecipeError, exit 2).
void check_resume_option(const CheckpointOptions& output);

class Checkpoints {
 public:
  Checkpoints(CheckpointOptions options, const Accelerator& acc);

  // The checkpoint output.resume names: the newest complete one in output.dir for `auto`
  // (nullopt when there is none; rank 0's choice, on every rank), PATH itself, nothing for
  // `never`. Every rank calls it.
  std::optional<std::string> resume_point() const;

  // Every rank calls it (RNG states and loop sums are gathered to rank 0); rank 0 writes
  // checkpoint-<state.global_step>, updates best_metric / checkpoint-best from `metrics` (the
  // evaluation since the last save, if any) and rotates old checkpoints. Returns the folder.
  std::string save(const TrainingParts& parts, TrainerState& state, const LoopSums& sums,
                   const std::optional<nlohmann::json>& metrics);

  // Every rank: restores model, optimizer, scheduler, loss scaler and this rank's RNG state;
  // returns the loop state and sets `sums` to this rank's.
  TrainerState load(const std::string& folder, const TrainingParts& parts, LoopSums& sums);

  const CheckpointOptions& options() const { return options_; }

 private:
  void write_folder(const std::string& name, const TrainingParts& parts, const TrainerState& state,
                    const std::vector<at::Tensor>& rng) const;
  void update_best_link(const std::string& name) const;
  void rotate(const std::string& best) const;

  CheckpointOptions options_;
  const Accelerator& acc_;
  std::string resumed_from_;  // never rotated away
};

// Complete checkpoint folders in `dir` (checkpoint-<N> with a trainer_state.json), oldest first.
std::vector<std::string> complete_checkpoints(const std::string& dir);

}  // namespace trainrun
