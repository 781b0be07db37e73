#include "components/callbacks/callback.h"

#include "support/errors.h"

namespace trainrun {

namespace {

// The trainer's own files, and what the folder's atomic write relies on, are not a callback's.
bool is_trainers_file(const std::string& name) {
  for (const auto& file : kCheckpointFiles)
    if (file.role != CheckpointFileRole::Added && name == file.name) return true;
  return false;
}

}  // namespace

void CheckpointFiles::add(const std::string& name, std::string bytes) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || is_trainers_file(name))
    throw TrainingError("a callback's checkpoint file '" + name +
                        "': expected a plain file name (no '/', not starting with '.') other than the trainer's own");
  if (files_.count(name)) throw TrainingError("a callback's checkpoint file '" + name + "' was added twice");
  files_[name] = std::move(bytes);
}

}  // namespace trainrun
