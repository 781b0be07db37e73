// `trainrun export RECIPE.yaml --checkpoint PATH --format torchscript|onnx|hub [--output FILE] [--ema]`:
// the checkpoint's model, traced in eval mode, as a file Python and LibTorch (TorchScript) or
// onnxruntime (ONNX) run without trainrun, carrying its preprocessing and labels (README "Export
// and serve"); or (hub) the folder a Hugging Face Hub model repository holds (hub_folder.h).
#include "components/callbacks/checkpoint_format.h"
#include "runner/cli/commands.h"
#include "runner/export/hub_folder.h"
#include "runner/export/metadata.h"
#include "runner/export/onnx.h"
#include "runner/export/torchscript.h"
#include "runner/io/labels.h"
#include "runner/io/weights.h"
#include "support/durable_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

#include <filesystem>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// --checkpoint's weights: the model file, or the EMA one with --ema (a folder only).
std::string export_weights(const std::string& checkpoint, bool ema) {
  if (!fs::exists(checkpoint)) throw RecipeError("export: --checkpoint " + checkpoint + ": no such file or folder");
  if (!ema) return weights_file(checkpoint);
  if (!fs::is_directory(checkpoint))
    throw RecipeError(std::string("export: --ema takes a checkpoint or run folder (it reads ") + kEmaModelFile +
                      " there), not a file");
  fs::path file = fs::path(checkpoint) / kEmaModelFile;
  if (!fs::is_regular_file(file))
    throw RecipeError("export: --ema: " + file.string() + ": no such file (was train.ema on for this run?)");
  return file.string();
}

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

// What the eval pipeline hands the model (C, H, W), the shape the trace and the ONNX input are
// made for: a crop's size, or the model's input size for a pipeline that keeps the image's.
std::vector<int64_t> pipeline_output_size(const Job& job) {
  if (job.eval_transforms_pending)
    throw RecipeError("export: data.eval_transforms: model: the weights' config.json is not here to build the pipeline from");
  const std::vector<int64_t> in = job.model->input_config().input_size;
  Rng rng(0);  // eval transforms draw nothing
  return job.eval_transforms(torch::zeros({in.at(1), in.at(2), in.at(0)}, torch::kUInt8), rng).sizes().vec();
}

std::string default_output(const std::string& weights, const std::string& format) {
  return (fs::path(weights).parent_path() / (fs::path(weights).stem().string() + (format == "onnx" ? ".onnx" : ".pt"))).string();
}

}  // namespace

int cmd_export(const std::vector<std::string>& args, const std::string& checkpoint, const std::string& format,
               const std::string& output, bool ema, const std::string& repo, const std::string& license) {
  if (format != "torchscript" && format != "onnx" && format != "hub")
    throw RecipeError("export: --format " + format + ": expected torchscript, onnx or hub");
  if (format != "hub" && (!repo.empty() || !license.empty()))
    throw RecipeError("export: --repo and --license are for --format hub (the model card's)");
  const std::string weights = export_weights(checkpoint, ema);
  JobOptions options;
  options.pretrained = false;  // the checkpoint's weights replace them
  // The data is not read: the labels come from the run's labels.json (beside the weights or one
  // folder up), else the outputs are numbered and num_classes: auto counts the weights' head.
  const TensorList tensors = load_safetensors(weights);
  options.classes = run_labels(weights);
  options.data = false;
  options.weights = &tensors;
  options.weights_source = weights;
  Job job = load_job(args, options);
  load_state_dict(*job.model, tensors, weights);
  at::set_num_threads(int(job.threads));
  job.model->to(torch::kCPU, torch::kFloat32);
  job.model->eval();
  const std::vector<int64_t> input_size = pipeline_output_size(job);
  if (format == "hub") {
    const std::string dir = output.empty() ? (fs::path(weights).parent_path() / "hub").string() : output;
    HubFolderOptions hub{repo, license.empty() ? "other" : license};
    std::vector<std::string> files;
    try {
      files = write_hub_folder(job, weights, input_size, dir, hub);
    } catch (const FileWriteError& e) {
      throw TrainingError(e.what());
    }
    spdlog::info("Wrote {}: {} (a Hub model repository's files; timm.create_model(\"{}\", pretrained=True) reads them)",
                 dir, fmt::format("{}", fmt::join(files, ", ")),
                 repo.empty() ? "local-dir:" + fs::absolute(dir).lexically_normal().string() : "hf-hub:" + repo);
    return kExitOk;
  }
  torch::jit::Module traced = trace_classifier(*job.model, input_size);
  check_trace(*job.model, traced, input_size);
  const auto metadata = export_metadata(job, weights, input_size);
  const std::string path = output.empty() ? default_output(weights, format) : output;
  try {
    if (format == "onnx") {
      OnnxOptions onnx;  // metadata_props: trainrun, preprocess, labels
      for (const auto& [name, text] : metadata) onnx.metadata[fs::path(name).stem().string()] = text;
      write_onnx(traced, input_size, path, onnx);
    } else {
      save_torchscript(traced, path, metadata);
    }
  } catch (const FileWriteError& e) {
    throw TrainingError(e.what());
  }
  spdlog::info("Wrote {} ({}, {} from {})", path, format, job.recipe.root["model"]["name"].as<std::string>(), weights);
  return kExitOk;
}

}  // namespace trainrun::cli
