// A trained model as a file of its own, for `trainrun export` and for the exports a Hub push
// includes (hub_push.h): the shape the eval pipeline hands the model, and the traced model
// written as TorchScript or ONNX with its preprocessing and labels (metadata.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

struct Job;

// What the eval pipeline hands the model (C, H, W), the shape the trace and the ONNX input are
// made for: a crop's size, or the model's input size for a pipeline that keeps the image's.
// RecipeError when the pipeline is the weights' own (eval_transforms: model) and unresolved.
std::vector<int64_t> pipeline_output_size(const Job& job);

// Traces job.model (on the CPU in fp32, eval mode, the weights of `weights` loaded) and writes it
// to `path` as `format` (torchscript | onnx). TrainingError when the trace's outputs differ from
// the model's (a forward that depends on the values); FileWriteError when it cannot be written.
void write_model_export(Job& job, const std::string& weights, const std::vector<int64_t>& input_size,
                        const std::string& format, const std::string& path);

}  // namespace trainrun
