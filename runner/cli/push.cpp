// `trainrun push RUN_DIR --repo ORG/NAME`: a finished run's model uploaded to a Hugging Face Hub
// model repository (runner/export/hub_push.h), the recipe being the run's recipe.resolved.yaml.
#include "components/callbacks/checkpoint_format.h"
#include "runner/cli/commands.h"
#include "runner/export/hub_push.h"
#include "runner/io/checkpoint.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// --checkpoint's weights file in the run folder `run`.
std::string push_weights(const fs::path& run, const std::string& checkpoint) {
  if (checkpoint.empty()) {
    if (!fs::is_regular_file(run / kModelFile))
      throw RecipeError("push: " + (run / kModelFile).string() +
                        ": no such file (the run has not finished; --checkpoint last pushes its newest checkpoint)");
    return (run / kModelFile).string();
  }
  fs::path folder = checkpoint;
  if (checkpoint == "best") {
    folder = run / "checkpoint-best";
    if (!fs::exists(folder)) throw RecipeError("push: --checkpoint best: " + folder.string() + ": no such folder (output.best_metric was null, or nothing was evaluated)");
  } else if (checkpoint == "last") {
    const auto all = complete_checkpoints(run.string());
    if (all.empty()) throw RecipeError("push: --checkpoint last: no complete checkpoint in " + run.string());
    folder = all.back();
  }
  if (!fs::is_regular_file(folder / kModelFile))
    throw RecipeError("push: --checkpoint " + checkpoint + ": " + (folder / kModelFile).string() + ": no such file");
  return (folder / kModelFile).string();
}

}  // namespace

int cmd_push(const PushOptions& o) {
  const fs::path run = o.run_dir;
  const fs::path recipe = run / "recipe.resolved.yaml";
  if (!fs::is_regular_file(recipe))
    throw RecipeError("push: " + o.run_dir + ": no recipe.resolved.yaml here: not a run folder trainrun wrote");
  const std::string weights = push_weights(run, o.checkpoint);
  HubPush push;
  push.repo_id = o.repo;
  push.revision = o.revision;
  push.private_repo = o.private_repo;
  push.message = o.message.empty() ? "Upload " + run.filename().string() + " with trainrun" : o.message;
  if (!is_repo_id(push.repo_id))
    throw RecipeError("push: --repo " + o.repo + ": expected ORG/NAME");
  Job job = trained_model_job({recipe.string()}, weights);
  StagingFolder staging;
  HubStageOptions stage;
  stage.repo = o.repo;
  stage.license = o.license.empty() ? "other" : o.license;
  stage.include = o.include;
  push.files = stage_hub_files(job, weights, staging.path(), stage);
  try {
    spdlog::info("{}", push_summary(hub_push(push), o.repo));
  } catch (const HubUploadError& e) {
    std::cerr << e.what() << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace trainrun::cli
