// A checkpoint's loop state in two files: trainer_state.json, the Hugging Face Trainer's
// TrainerState field for field (transformers' TrainerState.load_from_json reads it), and
// trainrun_state.json, what trainrun needs besides to continue exactly (the epoch in progress,
// its micro-batches consumed, every rank's loss sums).
#pragma once

// The file names and CheckpointError, which plugins have always reached through this header.
#include "components/callbacks/checkpoint_format.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

// The run's length as the trainer counts it: DistributedSampler's padded shard per rank, its
// batches, and k of them per optimizer step (the last group of an epoch may be partial).
struct RunLength {
  int64_t world_size = 1;
  int64_t examples_per_rank = 0;
  int64_t batches_per_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
};

// Per-rank sums the loop carries between log lines and to the end-of-training summary.
struct LoopSums {
  double loss_since_log = 0;
  int64_t batches_since_log = 0;
  double loss_total = 0;
  int64_t batches_total = 0;
};

// The loop state a checkpoint holds: the Trainer's fields (trainer_state.json) and trainrun's own
// (trainrun_state.json: the epoch in progress, the micro-batches of it already consumed, every
// rank's loop sums).
struct TrainerState {
  int64_t global_step = 0;
  double epoch = 0;  // fractional, as the Trainer's
  int64_t max_steps = 0, num_train_epochs = 0, logging_steps = 0, eval_steps = 0, save_steps = 0;
  int64_t train_batch_size = 0;
  std::optional<double> best_metric;
  std::string best_model_checkpoint;
  nlohmann::ordered_json log_history = nlohmann::ordered_json::array();
  // Callbacks' state, as transformers writes it: {"TrainerControl": {"args": {...}, "attributes":
  // {}}, "EarlyStoppingCallback": {...}, ...}, a list where several callbacks share a name.
  nlohmann::ordered_json stateful_callbacks = nlohmann::ordered_json::object();
  int64_t epoch_index = 0;       // epoch in progress (0-based)
  int64_t batches_in_epoch = 0;  // micro-batches of it consumed, on every rank
  int64_t world_size = 1;
  std::vector<LoopSums> ranks;
  // What makes the run the same job (runner/recipe/fingerprint.h); null in checkpoints written
  // before it was recorded.
  nlohmann::ordered_json job;

  // trainer_state.json: exactly transformers' TrainerState fields.
  nlohmann::ordered_json to_json() const;
  // trainrun_state.json.
  nlohmann::ordered_json resume_json() const;
  // trainer_state.json's fields (trainrun's own are left at their defaults).
  static TrainerState from_json(const nlohmann::json& j);
  // trainrun's own state from `ours` (trainrun_state.json, or an older checkpoint's
  // trainer_state.json "trainrun"); `where` begins each error ("trainrun_state.json: ").
  void read_resume_json(const nlohmann::json& ours, const std::string& where);
  // A callback stopped the run (transformers' TrainerControl.should_training_stop, as saved in
  // stateful_callbacks): it is over, whatever train.epochs says.
  bool stopped_early() const;
};

// A checkpoint folder's trainer_state.json and trainrun_state.json (or, in a checkpoint written
// before that file, trainer_state.json's "trainrun"); CheckpointError naming the file when
// unreadable.
TrainerState read_trainer_state(const std::string& folder);

// A checkpoint's JSON file (CheckpointError naming the file when unreadable or not JSON).
nlohmann::json read_json(const std::filesystem::path& path);

}  // namespace trainrun
