#include "runner/export/model_files.h"

#include "runner/export/metadata.h"
#include "runner/export/onnx.h"
#include "runner/export/torchscript.h"
#include "runner/recipe/job.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

#include <filesystem>

namespace trainrun {
namespace {

// The traced module must give the model's own outputs: a model whose forward branches on the
// values would not, and is refused rather than written.
void check_trace(Classifier& model, torch::jit::Module& traced, const std::vector<int64_t>& input_size) {
  std::vector<int64_t> shape{2};
  shape.insert(shape.end(), input_size.begin(), input_size.end());
  torch::NoGradGuard no_grad;
  at::Tensor x = torch::rand(shape);
  at::Tensor want = model.forward(x), got = traced.forward({x}).toTensor();
  const double diff = (got - want).abs().max().item<double>();
  if (!(diff <= 1e-5))
    throw TrainingError("export: the traced model's outputs differ from the model's by " + std::to_string(diff) +
                        " on a batch of 2: its forward depends on the values or the batch size, which a trace cannot record");
}

}  // namespace

std::vector<int64_t> pipeline_output_size(const Job& job) {
  if (job.eval_transforms_pending)
    throw RecipeError("export: data.eval_transforms: model: the weights' config.json is not here to build the pipeline from");
  const std::vector<int64_t> in = job.model->input_config().input_size;
  Rng rng(0);  // eval transforms draw nothing
  return job.eval_transforms(torch::zeros({in.at(1), in.at(2), in.at(0)}, torch::kUInt8), rng).sizes().vec();
}

void write_model_export(Job& job, const std::string& weights, const std::vector<int64_t>& input_size,
                        const std::string& format, const std::string& path) {
  torch::jit::Module traced = trace_classifier(*job.model, input_size);
  check_trace(*job.model, traced, input_size);
  const auto metadata = export_metadata(job, weights, input_size);
  if (format == "onnx") {
    OnnxOptions onnx;  // metadata_props: trainrun, preprocess, labels
    for (const auto& [name, text] : metadata) onnx.metadata[std::filesystem::path(name).stem().string()] = text;
    write_onnx(traced, input_size, path, onnx);
  } else {
    save_torchscript(traced, path, metadata);
  }
}

}  // namespace trainrun
