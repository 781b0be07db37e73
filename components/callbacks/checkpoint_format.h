// The checkpoint format's one home: every file a checkpoint-<step>/ folder can hold, what it
// holds, who writes it and what resuming does without it, and the error a checkpoint that
// cannot be written or read raises. The Hugging Face Trainer's layout (model.safetensors,
// optimizer.pt, scheduler, scaler, rng, trainer_state.json), with trainrun's own state in files
// of its own because transformers' TrainerState.load_from_json refuses foreign keys.
//
// Everything that names a checkpoint file spells it from here: the callbacks' CheckpointFiles
// (which names are the trainer's own), the folder writer and its completeness test
// (runner/io/checkpoint.h), what goes into a folder and comes back out (runner/train/checkpoints.h),
// preflight, eval and export; docs/reference/run-folder.md's checkpoint table is generated from
// kCheckpointFiles (tests/docs/run_folder_page_test.cpp), so a file added here is documented there.
#pragma once

#include <stdexcept>

namespace trainrun {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kEmaModelFile = "model_ema.safetensors";
constexpr const char* kOptimizerFile = "optimizer.pt";
constexpr const char* kSchedulerFile = "scheduler.json";
constexpr const char* kScalerFile = "scaler.json";
constexpr const char* kRngFile = "rng.pt";
constexpr const char* kStateFile = "trainer_state.json";
// Checkpoints written before this file existed kept its content under trainer_state.json's
// "trainrun" key, which transformers refuses (TrainerState(**json) takes its fields only); they
// are still read.
constexpr const char* kResumeFile = "trainrun_state.json";
// Where each rank's shard streams stood (webdataset runs only; components/data/loader/loader.h).
constexpr const char* kLoaderStateFile = "loader_state.json";

// What a file is to the folder: which ones make it a checkpoint at all, which are the trainer's
// own (a callback may not add a file of that name), which are added in some runs only.
enum class CheckpointFileRole {
  Defining,  // written by the trainer; a folder without it is not a checkpoint (never resumed from)
  Trainer,   // written by the trainer; resuming reads it
  Added,     // added through CheckpointFiles (a callback, the loop) in the runs that need it
};

struct CheckpointFile {
  const char* name;
  CheckpointFileRole role;
  const char* holds;       // what it is, as the run-folder page says it
  const char* written_by;  // who writes it, and in which runs
  const char* if_missing;  // what resuming does from a folder without it
};

// In the order they are written; trainer_state.json, written last, marks the folder complete.
inline constexpr CheckpointFile kCheckpointFiles[] = {
    {kModelFile, CheckpointFileRole::Defining, "the model's state_dict (opens with `safetensors.torch.load_file`)",
     "the trainer", "never starts from the folder (not a checkpoint)"},
    {kOptimizerFile, CheckpointFileRole::Trainer,
     "LibTorch's archive of the optimizer (`torch::save(optimizer)`): per-parameter state and group options",
     "the trainer", "fails"},
    {kSchedulerFile, CheckpointFileRole::Trainer, "the learning-rate schedule's position (below)", "the trainer",
     "fails"},
    {kScalerFile, CheckpointFileRole::Trainer, "the fp16 loss scaler (below)", "the trainer", "fails"},
    {kRngFile, CheckpointFileRole::Trainer,
     "torch CPU generator state of every rank (`cpu_rank_<r>`), and CUDA's (`cuda_rank_<r>`) on CUDA", "the trainer",
     "fails"},
    {kEmaModelFile, CheckpointFileRole::Added, "the EMA weights, with `train.ema`", "the EMA callback, with `train.ema`",
     "starts the EMA from the resumed weights"},
    {kLoaderStateFile, CheckpointFileRole::Added,
     "every process's shard streams: where each reads next and what its shuffle buffer holds (below)",
     "the training loop, with WebDataset shards", "replays the epoch's batches"},
    {kResumeFile, CheckpointFileRole::Trainer, "what trainrun needs besides to continue exactly (below)", "the trainer",
     "fails (older checkpoints kept it in `trainer_state.json`)"},
    {kStateFile, CheckpointFileRole::Defining,
     "transformers' `TrainerState`, exactly its fields (below); written last, so its presence marks a whole checkpoint",
     "the trainer", "never starts from the folder (not a checkpoint)"},
};

// A checkpoint that cannot be written (full disk, unwritable folder) or read: exit code 1.
// Older checkpoints are left as they were.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace trainrun
