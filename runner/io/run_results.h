// What a finished (or stopped) run folder says of itself, read from its metrics.jsonl: the
// evaluations' figures, the best value of a metric and the end-of-training line. `sweep` and `cv`
// build their reports from it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace trainrun {

struct RunResults {
  bool finished = false;                      // the end-of-training line (train_runtime) is there
  int64_t step = 0;                           // the last line's step
  std::map<std::string, double> last_eval;    // the last evaluation line's eval_* figures (not its timings)
  std::optional<double> best;                 // of `metric` over the evaluations
  int64_t best_step = 0;
  std::optional<double> train_loss;           // the end-of-training line's
};

// `metric` (eval_loss, eval_accuracy, ...), judged as `greater_is_better` says. A folder without
// metrics.jsonl reads as an empty, unfinished run.
RunResults read_run_results(const std::string& run_dir, const std::string& metric, bool greater_is_better);

}  // namespace trainrun
