// The train/eval loop: Trainer-like banner, log lines, metrics.jsonl and the run folder.
#pragma once

#include "runner/distributed/accelerator.h"
#include "runner/recipe/job.h"

#include <map>
#include <string>
#include <vector>

namespace trainrun {

class DataLoader;

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

struct EvalResult {
  std::map<std::string, double> metrics;  // eval_loss, eval_accuracy, eval_top5, ...
  int64_t examples = 0;
  // With keep_predictions: per example of this rank's shard, the target and the (up to) top-5
  // classes by decreasing score, for the classification report.
  std::vector<int64_t> targets;
  std::vector<std::vector<int64_t>> ranked;
};

// One pass over this rank's eval shard, summed over ranks: every example counts once.
EvalResult evaluate(Classifier& model, DataLoader& loader, const Loss& loss, const Job& job, const Accelerator& acc,
                    bool keep_predictions = false);

AcceleratorOptions accelerator_options(const Job& job);

// The loader's options for the train (shuffled, padded DistributedSampler shard) or eval split.
LoaderOptions loader_options(const Job& job, bool train);

// Trains as the recipe says, as one rank of `world`; rank 0 writes the run folder.
// Returns the last evaluation.
EvalResult train(Job& job, const WorldInfo& world);

}  // namespace trainrun
