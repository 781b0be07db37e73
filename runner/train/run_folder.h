// What a run prints and writes before its first step, beside the loop: the run folder (the
// resolved recipe, labels.json, train.log), the Trainer's "***** Running training *****" banner
// and its lines on resuming.
#pragma once

#include "components/callbacks/trainer_state.h"

#include <cstdint>
#include <string>

namespace trainrun {

class Accelerator;
struct Job;
struct WorldInfo;

// Rank 0 makes the run folder; every rank waits for it, then logs into its train.log.
void prepare_run_folder(const Job& job, Accelerator& acc);
void log_banner(const Job& job, const WorldInfo& world, const Accelerator& acc, const RunLength& length);
void log_resume(const std::string& from, int64_t epoch, int64_t step, int64_t skip);

}  // namespace trainrun
