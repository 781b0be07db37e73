// Checkpoints in Hugging Face Trainer's layout (SPEC §4): output.dir/checkpoint-<global_step>/
// holding model.safetensors, optimizer.pt, scheduler.json, scaler.json, rng.pt and
// trainer_state.json. A folder is written as .checkpoint-<step>.tmp, every file fsynced, then
// renamed, so a checkpoint-<step> folder is always complete; trainer_state.json is written last
// and is what marks a folder as resumable. checkpoint-best is a symlink to the best one.
#pragma once

#include <ATen/core/Tensor.h>
#include "runner/io/trainer_state.h"

#include <nlohmann/json.hpp>

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

// The `output` section's checkpoint keys.
struct CheckpointOptions {
  std::string dir;
  std::string save_every = "epoch";  // epoch | N optimizer steps | never
  std::optional<int64_t> keep_last = 3;  // nullopt = keep all
  std::string best_metric;           // eval_loss, eval_accuracy, ...; empty = none
  bool greater_is_better = false;    // inferred from the name, as the Trainer does
  std::string resume = "auto";       // auto | never | PATH

  bool enabled() const { return save_every != "never"; }
  int64_t save_steps() const;  // 0 unless save_every is a number
};

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

// The checkpoint this process would resume from, before any world exists (the launcher's and
// `check`'s view): output.resume's PATH, the newest complete checkpoint in output.dir for `auto`,
// nothing for `never` or when there is none.
std::optional<std::string> planned_resume_point(const CheckpointOptions& options);

// The checkpoint output.resume names: the newest complete one in output.dir for `auto` (nullopt
// when there is none; rank 0's choice, on every rank), PATH itself, nothing for `never`. Every
// rank calls it.
std::optional<std::string> resume_point(const CheckpointOptions& options, const Accelerator& acc);

// Every rank: restores model, optimizer, scheduler, loss scaler and this rank's RNG state;
// returns the loop state and sets `sums` to this rank's.
TrainerState load_checkpoint(const std::string& folder, const TrainingParts& parts, LoopSums& sums,
                             const Accelerator& acc);

// Writes checkpoints into output.dir, keeps checkpoint-best and rotates old ones away.
class Checkpoints {
 public:
  // Rank 0 removes what a crash during a save left behind (.checkpoint-N.tmp).
  Checkpoints(CheckpointOptions options, const Accelerator& acc);

  // A folder never rotated away (the checkpoint this run resumed from).
  void keep(const std::string& folder) { kept_ = folder; }

  // Every rank calls it (RNG states and loop sums are gathered to rank 0); rank 0 writes
  // checkpoint-<state.global_step>, updates best_metric / checkpoint-best from `metrics` (the
  // evaluation since the last save, if any) and rotates old checkpoints. Returns the folder.
  std::string save(const TrainingParts& parts, TrainerState& state, const LoopSums& sums,
                   const std::optional<nlohmann::json>& metrics);

  const CheckpointOptions& options() const { return options_; }

 private:
  void write_folder(const std::string& name, const TrainingParts& parts, const TrainerState& state,
                    const std::vector<at::Tensor>& rng) const;
  void update_best_link(const std::string& name) const;
  void rotate(const std::string& best) const;

  CheckpointOptions options_;
  const Accelerator& acc_;
  std::string kept_;
};

// Complete checkpoint folders in `dir` (checkpoint-<N> with a trainer_state.json), oldest first.
std::vector<std::string> complete_checkpoints(const std::string& dir);

}  // namespace trainrun
