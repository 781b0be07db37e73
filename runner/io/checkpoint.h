// Checkpoint folders in the Trainer's layout (docs/reference/run-folder.md): output.dir/checkpoint-<step>/
// holding the files components/callbacks/checkpoint_format.h declares. A folder is written as .checkpoint-<step>.tmp, every file fsynced, then
// renamed, so a checkpoint-<step> folder is always complete; trainer_state.json is written last
// and is what marks a folder as resumable. checkpoint-best is a symlink to the best one.
// This file knows folders only: what goes into one is runner/train/checkpoints.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

// output.push_to_hub: the Trainer's push_to_hub + hub_model_id + hub_strategy + hub_private_repo
// (runner/export/hub_push.h does the pushing).
struct PushToHubOptions {
  std::string repo;                     // ORG/NAME
  std::string strategy = "every_save";  // end | every_save | checkpoint
  bool private_repo = false;            // for a repository the push creates
  std::string revision = "main";
};

// The `output` section's checkpoint keys (declared, with their defaults, in runner/recipe/sections.cpp).
struct CheckpointOptions {
  std::string dir;
  std::string save_every;            // epoch | N optimizer steps | never
  std::optional<int64_t> keep_last;  // nullopt = keep all
  std::string best_metric;           // eval_loss, eval_accuracy, ...; empty = none
  bool greater_is_better = false;    // inferred from the name, as the Trainer does (or set)
  bool load_best_model_at_end = false;  // the final model.safetensors is checkpoint-best's
  std::string resume;                // auto | never | PATH
  std::optional<PushToHubOptions> push_to_hub;  // null: no push

  bool enabled() const { return save_every != "never"; }
  int64_t save_steps() const;  // 0 unless save_every is a number
};

// Checks output.resume before anything starts: a PATH that is not a complete checkpoint is a
// bad input (RecipeError, exit 2).
void check_resume_option(const CheckpointOptions& output);
void check_resume_path(const std::string& path);

// The checkpoint this process would resume from, before any world exists (the launcher's and
// `check`'s view): output.resume's PATH, the newest complete checkpoint in output.dir for `auto`,
// nothing for `never` or when there is none.
std::optional<std::string> planned_resume_point(const CheckpointOptions& options);

// Complete checkpoint folders in `dir` (checkpoint-<N> with a trainer_state.json), oldest first.
std::vector<std::string> complete_checkpoints(const std::string& dir);
bool is_complete_checkpoint(const std::filesystem::path& folder);
// N of a folder named checkpoint-N.
std::optional<int64_t> checkpoint_step(const std::string& folder_name);

// What a crash during a save left behind (.checkpoint-N.tmp) in `dir`: removed, with a warning.
void remove_unfinished_checkpoints(const std::string& dir);

// Writes dir/name: `write_files` fills a temporary folder, then `state_json` goes in as
// trainer_state.json (last: it marks the folder complete), every file and the folder are fsynced
// and the folder renamed into place (over an older one of the same name). On failure the
// temporary folder is removed and a CheckpointError names the folder; older checkpoints stay.
void write_checkpoint_folder(const std::string& dir, const std::string& name,
                             const std::function<void(const std::filesystem::path& tmp)>& write_files,
                             const std::string& state_json);

// Points dir/checkpoint-best at `name` (replaced atomically).
void update_best_link(const std::string& dir, const std::string& name);

// Removes all but the newest `keep_last` complete checkpoints in `dir`, never `best` (a folder
// name) nor `kept` (the folder a run resumed from).
void rotate_checkpoints(const std::string& dir, std::size_t keep_last, const std::string& best, const std::string& kept);

}  // namespace trainrun
