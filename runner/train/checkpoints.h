// What a checkpoint holds and how every rank takes part: the model, optimizer, scheduler, loss
// scaler, each rank's RNG state and loss sums (gathered to rank 0, which writes), the loop state
// and best metric, and what callbacks add. The folders themselves: runner/io/checkpoint.h.
#pragma once

#include "runner/io/checkpoint.h"
#include "components/callbacks/trainer_state.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
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

// What a checkpoint restores besides the loop state.
struct TrainingParts {
  Classifier& model;
  torch::optim::Optimizer& optimizer;
  Scheduler& scheduler;
  LossScaler& scaler;
};

// The checkpoint output.resume names: the newest complete one in output.dir for `auto` (nullopt
// when there is none; rank 0's choice, on every rank), PATH itself, nothing for `never`. Every
// rank calls it.
std::optional<std::string> resume_point(const CheckpointOptions& options, const Accelerator& acc);

// Every rank: restores model, optimizer, scheduler, loss scaler and this rank's RNG state on
// this run's device, whichever device wrote the checkpoint (tensors are read onto it, RNG states
// mapped by map_rng_states); returns the loop state and sets `sums` to this rank's.
TrainerState load_checkpoint(const std::string& folder, const TrainingParts& parts, LoopSums& sums,
                             const Accelerator& acc, uint64_t seed);

// What a resume does with a rank's generator states in rng.pt on this run's device. The CPU
// generator's state is restored wherever the checkpoint was written (CPU and CUDA runs both save
// it); CUDA's only on CUDA. A CUDA run resuming a checkpoint written on the CPU has no CUDA state to
// restore: its CUDA generator is seeded with seed + global step, so that its dropout masks neither
// repeat the run's first steps' nor change from one such resume to the next. `note` says what was
// not restored (empty when the checkpoint's device is this run's).
struct RngMapping {
  bool restore_cpu = false;
  bool restore_cuda = false;
  std::optional<uint64_t> cuda_seed;
  std::string note;
};
RngMapping map_rng_states(bool saved_cpu, bool saved_cuda, bool on_cuda, uint64_t seed, int64_t global_step);

// Writes checkpoints into output.dir, keeps checkpoint-best and rotates old ones away.
class Checkpoints {
 public:
  // Rank 0 removes what a crash during a save left behind (.checkpoint-N.tmp).
  Checkpoints(CheckpointOptions options, const Accelerator& acc);

  // A folder never rotated away (the checkpoint this run resumed from).
  void keep(const std::string& folder) { kept_ = folder; }

  // Every rank calls it (RNG states and loop sums are gathered to rank 0); rank 0 writes
  // checkpoint-<state.global_step> with `extra_files` (name -> bytes, what callbacks add) beside
  // the trainer's, updates best_metric / checkpoint-best from `metrics` (the evaluation since
  // the last save, if any) and rotates old checkpoints. Returns the folder.
  std::string save(const TrainingParts& parts, TrainerState& state, const LoopSums& sums,
                   const std::optional<nlohmann::json>& metrics,
                   const std::map<std::string, std::string>& extra_files = {});

  const CheckpointOptions& options() const { return options_; }

 private:
  void write_folder(const std::string& name, const TrainingParts& parts, const TrainerState& state,
                    const std::vector<at::Tensor>& rng, const std::map<std::string, std::string>& extra_files) const;

  CheckpointOptions options_;
  const Accelerator& acc_;
  std::string kept_;
};

}  // namespace trainrun
