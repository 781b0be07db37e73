// The built-in callbacks, one concern each (files in this folder), and the list a run trains
// with: these in this order, then the recipe's `callbacks:` from the registry.
#pragma once

#include "components/callbacks/callback.h"

#include <memory>
#include <vector>

namespace trainrun {

struct Job;
struct WorldInfo;
struct TrainConfig;
struct CheckpointOptions;
struct EmaOptions;

// logging.cpp: the progress bar, the console's {'loss': ...} lines, metrics.jsonl + TensorBoard.
std::shared_ptr<Callback> progress_callback();
std::shared_ptr<Callback> console_callback();
std::shared_ptr<Callback> metrics_file_callback();
// step_agreement.cpp: before each optimizer step the ranks agree on stop signals and nan/inf losses.
std::shared_ptr<Callback> step_agreement_callback();
// flow.cpp: when to log and evaluate (train.log_every_steps, train.eval_every).
std::shared_ptr<Callback> flow_callback(const TrainConfig& train);
// unfreeze.cpp: gradual unfreezing (freeze[].from_epoch, train.unfreeze_at_epoch).
std::shared_ptr<Callback> unfreeze_callback();
// checkpointing.cpp: when to save (output.save_every), checkpoint-N, checkpoint-best, rotation.
std::shared_ptr<Callback> checkpoint_callback(const CheckpointOptions& output);

// ema.cpp: train.ema, timm's ModelEmaV3 (model_ema.safetensors, eval_ema_*).
std::shared_ptr<Callback> ema_callback(const EmaOptions& options);

// The built-in ones above, then the recipe's (registered callbacks, e.g. early_stopping);
// without the progress bar when `progress` is false (lr-find draws its own).
std::vector<std::shared_ptr<Callback>> all_callbacks(const Job& job, bool progress = true);

// Trains as the recipe says, as one rank of `world`, with all_callbacks(job) and then `extra`
// (the Hub pusher of output.push_to_hub, which lives above this layer); rank 0 writes the run
// folder. Returns the last evaluation.
EvalResult train(Job& job, const WorldInfo& world, const std::vector<std::shared_ptr<Callback>>& extra = {},
                 bool progress = true);

}  // namespace trainrun
