// The failures trainrun's exit codes tell apart (docs/reference/exit-codes.md), for every layer to
// throw: the command line turns each into one line on stderr and its exit code (runner/cli/main.cpp).
#pragma once

#include <stdexcept>
#include <string>

namespace trainrun {

// A mistake in the recipe, the command line or the launcher's environment: exit code 2, nothing
// was started or written.
struct RecipeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

}  // namespace trainrun
