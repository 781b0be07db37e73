// What a run checks before anything is started or written, so that every mistake in a recipe is
// exit 2 with nothing on disk (docs/reference/bad-inputs.md): `trainrun check` and a run (in the launcher, before the
// workers start, and in each worker before the run folder) call the same function.
#pragma once

#include "components/callbacks/trainer_state.h"
#include "runner/recipe/job.h"

namespace trainrun {

RunLength run_length(const Job& job, int64_t world_size);

// data.global_batch_size on `world_size` processes: sets job.config.train.grad_accum_steps to
// global / (data.batch_size x processes). RecipeError when that is not a whole number (naming the
// batch sizes and process counts that would make it), or when train.grad_accum_steps also says
// another number. Nothing without data.global_batch_size.
void fit_global_batch(Job& job, int64_t world_size);

// The recipe's optimizer over the trainable parameters and, when the run's length is known
// (steps_per_epoch > 0), its scheduler: what LibTorch refuses (c10::Error) is the section's
// RecipeError ("optimizer: ...", "scheduler: ...").
struct CheckedOptimization {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<Scheduler> scheduler;  // null while the length is unknown
};
CheckedOptimization checked_optimization(const Job& job, int64_t total_steps, int64_t steps_per_epoch);

// Throws RecipeError when `world_size` processes have fewer training examples than processes,
// when the optimizer or scheduler cannot be built for this run's length, when a recipe callback
// refuses the job (Callback::check: early stopping on a metric no evaluation reports), or when one example
// does not pass through the train or eval transforms and the model (a normalize with the wrong
// number of channels, an image transform after to_tensor, a size the model cannot take).
RunLength preflight(const Job& job, int64_t world_size);

// Throws RecipeError when the run would resume (output.resume: auto finding a checkpoint in
// output.dir, or a PATH) from a checkpoint whose optimizer state does not fit this recipe's
// optimizer: another optimizer, other no_decay groups or other freeze rules (LibTorch fails on it only after the run
// started, with an internal assert). Run by the process that makes the run folder, and by `check`.
// Recipes that unfreeze during training are left to the run (the groups depend on the epoch).
void check_resume_fits(const Job& job);

// Throws RecipeError when the process that makes the run folder could not write output.dir: the
// folder, or the nearest part of its path that exists, is a file, on a read-only file system or
// not writable for this user. Nothing is created. (`trainrun check` leaves it alone: a recipe is
// often checked on another machine than the one it runs on.)
void check_output_folder(const std::string& dir);

}  // namespace trainrun
