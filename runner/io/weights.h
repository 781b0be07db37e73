// A module's state_dict (parameters and buffers under PyTorch's key names) to and from
// safetensors, with exact key checking.
#pragma once

#include "support/safetensors.h"

#include <string>

namespace torch::nn {
class Module;
}

namespace trainrun {

TensorList state_dict(const torch::nn::Module& module);

struct LoadReport {
  std::vector<std::string> reinitialised;  // classifier keys whose shape differed
};

// Copies `tensors` into `module` (converting F16/BF16/F64 to the model's float dtype). Every key
// must match in name and shape, except keys matching `classifier_glob` whose shape differs: those
// keep their fresh init and are reported. A missing BatchNorm `num_batches_tracked` is set to 0,
// as PyTorch's load_state_dict does for files without version metadata. Throws WeightsError
// listing missing / unexpected / mismatched keys and integer tensors for float ones (or the reverse).
LoadReport load_state_dict(torch::nn::Module& module, const TensorList& tensors, const std::string& source,
                           const std::string& classifier_glob = "");

}  // namespace trainrun
