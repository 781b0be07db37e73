// `trainrun export RECIPE.yaml --checkpoint PATH --format torchscript|onnx|hub [--output FILE] [--ema]`:
// the checkpoint's model, traced in eval mode, as a file Python and LibTorch (TorchScript) or
// onnxruntime (ONNX) run without trainrun, carrying its preprocessing and labels (README "Export
// and serve"); or (hub) the folder a Hugging Face Hub model repository holds (hub_folder.h).
#include "components/callbacks/checkpoint_format.h"
#include "runner/cli/commands.h"
#include "runner/export/hub_folder.h"
#include "runner/export/model_files.h"
#include "runner/io/labels.h"
#include "runner/io/weights.h"
#include "support/durable_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
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

std::string default_output(const std::string& weights, const std::string& format) {
  return (fs::path(weights).parent_path() / (fs::path(weights).stem().string() + (format == "onnx" ? ".onnx" : ".pt"))).string();
}

}  // namespace

Job trained_model_job(const std::vector<std::string>& args, const std::string& weights) {
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
  return job;
}

int cmd_export(const std::vector<std::string>& args, const std::string& checkpoint, const std::string& format,
               const std::string& output, bool ema, const std::string& repo, const std::string& license) {
  if (format != "torchscript" && format != "onnx" && format != "hub")
    throw RecipeError("export: --format " + format + ": expected torchscript, onnx or hub");
  if (format != "hub" && (!repo.empty() || !license.empty()))
    throw RecipeError("export: --repo and --license are for --format hub (the model card's)");
  const std::string weights = export_weights(checkpoint, ema);
  Job job = trained_model_job(args, weights);
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
  const std::string path = output.empty() ? default_output(weights, format) : output;
  try {
    write_model_export(job, weights, input_size, format, path);
  } catch (const FileWriteError& e) {
    throw TrainingError(e.what());
  }
  spdlog::info("Wrote {} ({}, {} from {})", path, format, job.recipe.root["model"]["name"].as<std::string>(), weights);
  return kExitOk;
}

}  // namespace trainrun::cli
