// What output.resume will do with the run folder, decided before anything starts (the launcher,
// `trainrun check`) and again by the world that trains (whose rank 0 picks the checkpoint): start
// afresh, resume a checkpoint of the same job, say that the run is finished, or refuse a folder
// that holds another job (runner/recipe/fingerprint.h).
#pragma once

#include "components/callbacks/trainer_state.h"
#include "runner/recipe/job.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trainrun {

struct ResumePlan {
  enum class Action { Start, Resume, Finished, Refuse };
  Action action = Action::Start;
  std::string checkpoint;  // the folder it resumes from (Resume, Finished, Refuse)
  int64_t step = 0;        // its global step
  // Refuse: the error line (exit 2). Finished: the line the run prints (exit 0). Resume: a
  // warning when an explicitly named checkpoint is another job's, else empty.
  std::string line;
};

// The fingerprint of `job` on `world_size` processes, as its checkpoints record it.
nlohmann::ordered_json job_fingerprint(const Job& job, int64_t world_size);

// What output.resume does for `job` on `world_size` processes given `saved`, the state of the
// checkpoint it would resume from (`checkpoint`). `auto` refuses another job's checkpoint; a
// PATH named in the recipe is resumed as asked, with a warning. A run whose checkpoint reached
// the end (its global step, or a callback that stopped it) is Finished.
// `total_steps`: the run's length (run_length), unknown to `check` before the data is here.
ResumePlan plan_resume(const Job& job, int64_t world_size, const std::string& checkpoint, const TrainerState& saved,
                       std::optional<int64_t> total_steps);

// The same from the folder as this process sees it (planned_resume_point): Start without a
// checkpoint; a checkpoint that cannot be read is left to the run to report (Resume). Without
// the data (job.data.train unset) the length is unknown, and only a callback's stop is Finished.
ResumePlan plan_resume(const Job& job, int64_t world_size);

// One line for `trainrun check`: "start in runs/x (no checkpoint there)", "resume from
// runs/x/checkpoint-400 (step 400 of 469)", "nothing: ... finished ...", "refuse (exit 2): ...".
std::string describe(const ResumePlan& plan, const Job& job, int64_t world_size);

}  // namespace trainrun
