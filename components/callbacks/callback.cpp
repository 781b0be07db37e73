#include "components/callbacks/callback.h"

#include "support/errors.h"

#include <set>

namespace trainrun {

void CheckpointFiles::add(const std::string& name, std::string bytes) {
  // The trainer's own files, and what the folder's atomic write relies on, are not a callback's.
  static const std::set<std::string> taken = {kStateFile,       kResumeFile,   "model.safetensors", "optimizer.pt",
                                              "scheduler.json", "scaler.json", "rng.pt"};
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || taken.count(name))
    throw TrainingError("a callback's checkpoint file '" + name +
                        "': expected a plain file name (no '/', not starting with '.') other than the trainer's own");
  if (files_.count(name)) throw TrainingError("a callback's checkpoint file '" + name + "' was added twice");
  files_[name] = std::move(bytes);
}

}  // namespace trainrun
