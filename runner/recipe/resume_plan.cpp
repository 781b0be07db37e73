#include "runner/recipe/resume_plan.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/io/checkpoint.h"
#include "runner/recipe/fingerprint.h"
#include "runner/recipe/preflight.h"

#include <fmt/format.h>

#include <filesystem>

namespace trainrun {

namespace {

constexpr std::size_t kDifferencesShown = 3;

std::string where(const Job& job, const std::string& checkpoint) {
  return job.config.output.resume == "auto" ? job.config.output.dir : checkpoint;
}

std::string joined(const std::vector<std::string>& diffs) {
  std::string s;
  for (std::size_t i = 0; i < diffs.size() && i < kDifferencesShown; ++i) s += (i ? ", " : "") + diffs[i];
  if (diffs.size() > kDifferencesShown) s += fmt::format(" (and {} more)", diffs.size() - kDifferencesShown);
  return s;
}

}  // namespace

nlohmann::ordered_json job_fingerprint(const Job& job, int64_t world_size) {
  return job_fingerprint(job.fingerprint, job.config.data.batch_size, world_size, job.config.train.grad_accum_steps);
}

ResumePlan plan_resume(const Job& job, int64_t world_size, const std::string& checkpoint, const TrainerState& saved,
                       std::optional<int64_t> total_steps) {
  ResumePlan plan;
  plan.checkpoint = checkpoint;
  plan.step = saved.global_step;
  plan.action = ResumePlan::Action::Resume;
  if (!saved.job.is_null()) {
    const auto diffs = fingerprint_differences(saved.job, job_fingerprint(job, world_size));
    if (!diffs.empty() && job.config.output.resume == "auto") {
      plan.action = ResumePlan::Action::Refuse;
      plan.line = job.config.output.dir + " holds another run: " + joined(diffs) +
                  "; use output.dir=..., or output.resume=never to start over in it";
      return plan;
    }
    if (!diffs.empty())
      plan.line = "output.resume: " + checkpoint + " was saved by another job (" + joined(diffs) + "); resuming from it as asked";
  }
  const int64_t epochs = job.config.train.epochs;
  // A run is over once it wrote its end (the final model.safetensors, after the final evaluation):
  // a checkpoint at the last step written because a signal stopped that step is resumed, and the
  // resumed run trains nothing and ends as it would have.
  if (!std::filesystem::exists(std::filesystem::path(job.config.output.dir) / kModelFile)) return plan;
  if (saved.stopped_early()) {
    plan.action = ResumePlan::Action::Finished;
    plan.line = fmt::format("{}: finished at step {} (stopped early by a callback in epoch {:g} of {}); nothing to train",
                            where(job, checkpoint), saved.global_step, saved.epoch, epochs);
  } else if (total_steps && saved.global_step >= *total_steps) {
    plan.action = ResumePlan::Action::Finished;
    plan.line = fmt::format("{}: finished at step {} (epoch {:g} of {}); nothing to train", where(job, checkpoint),
                            saved.global_step, saved.epoch, epochs);
  }
  return plan;
}

ResumePlan plan_resume(const Job& job, int64_t world_size) {
  std::optional<std::string> from;
  TrainerState saved;
  try {
    from = planned_resume_point(job.config.output);
    if (!from) return ResumePlan{};
    saved = read_trainer_state(*from);
  } catch (const CheckpointError&) {
    ResumePlan plan;  // the run's error to report, as it always was
    plan.action = ResumePlan::Action::Resume;
    plan.checkpoint = from.value_or("");
    return plan;
  }
  std::optional<int64_t> total;
  if (job.data.train) total = run_length(job, world_size).total_steps;
  return plan_resume(job, world_size, *from, saved, total);
}

std::string describe(const ResumePlan& plan, const Job& job, int64_t world_size) {
  const CheckpointOptions& o = job.config.output;
  switch (plan.action) {
    case ResumePlan::Action::Start:
      return "start in " + o.dir + (o.resume == "never" ? " (output.resume: never)" : " (no checkpoint there)");
    case ResumePlan::Action::Resume:
      return fmt::format("resume from {} (step {}{}){}", plan.checkpoint, plan.step,
                         job.data.train ? fmt::format(" of {}", run_length(job, world_size).total_steps) : "",
                         plan.line.empty() ? "" : "; " + plan.line);
    case ResumePlan::Action::Finished:
      return "nothing: " + plan.line;
    case ResumePlan::Action::Refuse:
      return "refuse (exit 2): " + plan.line;
  }
  return "";
}

}  // namespace trainrun
