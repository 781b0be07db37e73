// A sweep's report: each run's swept values, status and figures from its metrics.jsonl
// (runner/io/run_results.h), sorted by output.best_metric (eval_loss when it is null), as
// sweep_report.csv and sweep_report.md, and sweep_plot.png: the best metric against each swept key.
#pragma once

#include "runner/io/checkpoint.h"
#include "runner/recipe/sweep_plan.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace trainrun::cli {

// `codes`: the exit code of each run this session ran or skipped as finished (absent: not run).
void write_sweep_report(const std::filesystem::path& dir, const SweepPlan& plan, const std::vector<SweepRun>& runs,
                        const std::map<std::string, int>& codes, const CheckpointOptions& output);

}  // namespace trainrun::cli
