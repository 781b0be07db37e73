// TorchScript from C++ (`trainrun export --format torchscript`): a model's eval-mode forward traced
// as torch.jit.trace traces a Python module, into a torch::jit::Module whose parameters and buffers
// carry the model's state_dict names, so Python's torch.jit.load and LibTorch's torch::jit::load
// run it without trainrun.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace trainrun {

class Classifier;

// The traced module (forward(self, input) -> output). Traces `model` in eval mode on a CPU fp32
// input of `input_size` (C, H, W) with a batch of 1, under no_grad; the model is put back in the
// mode it was in. The trace records x.size(0) where the model asks for it, so other batch sizes run.
torch::jit::Module trace_classifier(Classifier& model, const std::vector<int64_t>& input_size);

// Writes `module` to `path` (whole or not at all) with `extra_files` (name -> contents) stored
// beside the code, as torch.jit.save's _extra_files: Python reads them with
// torch.jit.load(path, _extra_files={...}). Throws FileWriteError.
void save_torchscript(const torch::jit::Module& module, const std::string& path,
                      const std::map<std::string, std::string>& extra_files);

}  // namespace trainrun
