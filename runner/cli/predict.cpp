// `trainrun predict RECIPE.yaml --checkpoint PATH IMAGE...` or `trainrun predict --model EXPORTED.pt
// IMAGE...`: one JSON line per image (docs/reference/cli.md), in the order given (a folder's images in timm's order,
// predict_files.h), with the top-k classes, their scores and the raw logits; --output writes the
// top k as timm's inference.py does. An image that does not decode is skipped with a line naming
// it, in both forms, and the exit code is then 1.
#include "components/data/image.h"
#include "runner/cli/commands.h"
#include "runner/cli/predict_files.h"
#include "runner/export/metadata.h"
#include "runner/io/labels.h"
#include "runner/io/thresholds.h"
#include "runner/io/weights.h"

#include <nlohmann/json.hpp>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// What classifies one image: the pipeline before the model, the model, and how to name its outputs.
struct Classify {
  Compose transforms;
  std::function<at::Tensor(const at::Tensor&)> forward;  // a batch of one -> its outputs
  int64_t channels = 3;
  bool log_probs = false;
  std::vector<std::string> classes;
  bool skip_bad = false;
  bool multilabel = false;  // sigmoid scores; `labels` lists every class above its threshold
  std::vector<double> thresholds{0.5};  // one for every class, or one per class
};

// What predict gave: each classified image's top k, and how many images it skipped.
struct Results {
  std::vector<TopK> rows;
  int64_t skipped = 0;
};

// A multilabel prediction: every class whose sigmoid is above its threshold, by decreasing score.
nlohmann::ordered_json predicted_labels(const at::Tensor& probs, const std::vector<double>& thresholds,
                                        const std::function<std::string(int64_t)>& label) {
  if (thresholds.size() != 1 && int64_t(thresholds.size()) != probs.size(0))
    throw RecipeError("predict: " + std::to_string(thresholds.size()) + " thresholds (one per class) for a model of " +
                      std::to_string(probs.size(0)) + " outputs");
  auto [scores, indices] = probs.sort(0, /*descending=*/true);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int64_t k = 0; k < indices.size(0); ++k) {
    const int64_t i = indices[k].item<int64_t>();
    const double score = scores[k].item<double>(), threshold = thresholds[thresholds.size() == 1 ? 0 : std::size_t(i)];
    if (score > threshold) out.push_back({{"label", label(i)}, {"index", i}, {"score", score}, {"threshold", threshold}});
  }
  return out;
}

// Which thresholds a multilabel model predicts with: --threshold (`given`, NaN if none) for every
// class, else its tuned ones (`tuned`: thresholds.json's, or the export's), else `fallback`.
std::vector<double> thresholds_to_use(bool multilabel, double given, std::optional<std::vector<double>> tuned,
                                      double fallback) {
  if (!std::isnan(given) && !multilabel)
    throw RecipeError("predict --threshold: the model is single-label (softmax scores); a threshold is a multilabel "
                      "model's (train.task: multilabel)");
  if (!std::isnan(given)) return {given};
  if (tuned && !tuned->empty()) return *tuned;
  return {fallback};
}

// Scores are softmax probabilities, or a multilabel model's sigmoids; "logits" is the model's raw
// output (log-probabilities for basicnet).
Results predict_images(const Classify& model, int64_t top_k, const std::vector<std::string>& images) {
  Results results;
  torch::NoGradGuard no_grad;
  for (auto& image : images) {
    at::Tensor pixels;
    try {
      pixels = decode_image(image, model.channels);
    } catch (const DataError& e) {
      if (!model.skip_bad) throw;
      std::cerr << "warning: " << e.what() << " (skipped)\n";  // stdout holds only the JSON lines
      ++results.skipped;
      continue;
    }
    Rng rng(0);  // eval transforms draw nothing
    at::Tensor out = model.forward(model.transforms(pixels, rng).unsqueeze(0))[0].to(at::kFloat).cpu();
    at::Tensor probs = model.multilabel ? out.sigmoid() : model.log_probs ? out.exp() : out.softmax(0);
    auto [scores, indices] = probs.topk(std::min<int64_t>(top_k, probs.size(0)));
    auto label = [&](int64_t i) { return std::size_t(i) < model.classes.size() ? model.classes[std::size_t(i)] : std::to_string(i); };
    TopK row{image, {}, {}, {}};
    nlohmann::ordered_json topk = nlohmann::ordered_json::array();
    for (int64_t k = 0; k < indices.size(0); ++k) {
      row.index.push_back(indices[k].item<int64_t>());
      row.label.push_back(label(row.index.back()));
      row.prob.push_back(scores[k].item<double>());
      topk.push_back({{"label", row.label.back()}, {"index", row.index.back()}, {"score", row.prob.back()}});
    }
    std::vector<double> logits(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
    nlohmann::ordered_json line{{"file", image}};
    if (model.multilabel) {
      line["labels"] = predicted_labels(probs, model.thresholds, label);
      if (model.thresholds.size() == 1) line["threshold"] = model.thresholds[0];
    } else {
      line.update({{"label", topk[0]["label"]}, {"index", topk[0]["index"]}, {"score", topk[0]["score"]}});
    }
    line.update({{"topk", topk}, {"logits", logits}});
    std::cout << line.dump() << std::endl;
    results.rows.push_back(std::move(row));
  }
  return results;
}

// `predict RECIPE --checkpoint PATH`: the recipe's model with the checkpoint's weights.
Results predict_with_recipe(const std::vector<std::string>& args, const std::string& checkpoint, int64_t top_k,
                            const std::vector<std::string>& images, double threshold) {
  std::string file = weights_file(checkpoint);
  JobOptions options;
  options.pretrained = false;
  // The data is not read: the labels come from the run's labels.json (beside the weights or one
  // folder up), else the outputs are numbered and num_classes: auto counts the weights' head.
  const TensorList tensors = load_safetensors(file);
  options.classes = run_labels(file);
  options.data = false;
  options.weights = &tensors;
  options.weights_source = file;
  Job job = load_job(args, options);
  load_state_dict(*job.model, tensors, file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  job.model->eval();
  const std::string device = job.device;
  const bool multilabel = job.config.train.task == "multilabel";
  std::string note;
  std::optional<std::vector<double>> tuned;
  if (multilabel && std::isnan(threshold)) tuned = tuned_thresholds(file, job.data.classes, &note);
  if (!note.empty()) std::cerr << "warning: " << note << "; predicting at train.threshold\n";
  Classify model{job.eval_transforms, [&job, device](const at::Tensor& x) { return job.model->forward(x.to(device)); },
                 job.model->input_config().input_size.at(0), job.model->outputs_log_probs(), job.data.classes,
                 job.config.data.skip_bad_files, multilabel,
                 thresholds_to_use(multilabel, threshold, tuned, job.config.train.threshold)};
  return predict_images(model, top_k, images);
}

// `predict --model EXPORTED`: a `trainrun export --format torchscript` file alone, on the CPU.
Results predict_with_export(const std::string& path, int64_t top_k, const std::vector<std::string>& images,
                            double threshold) {
  if (!fs::is_regular_file(path)) throw RecipeError("predict: --model " + path + ": no such file");
  torch::jit::ExtraFilesMap extra{{"trainrun.json", ""}, {"labels.json", ""}};
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU, extra);
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    throw RecipeError("predict: --model " + path + ": not a TorchScript file (" + why.substr(0, why.find('\n')) + ")");
  }
  module.eval();
  ExportedPipeline pipeline = exported_pipeline(extra["trainrun.json"], extra["labels.json"], path);
  at::set_num_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  Classify model{pipeline.eval_transforms, [&module](const at::Tensor& x) { return module.forward({x}).toTensor(); },
                 pipeline.channels, pipeline.log_probs, pipeline.classes, /*skip_bad=*/true, pipeline.multilabel,
                 thresholds_to_use(pipeline.multilabel, threshold, pipeline.thresholds, pipeline.threshold)};
  return predict_images(model, top_k, images);
}

}  // namespace

int cmd_predict(const std::vector<std::string>& args, const std::string& checkpoint, const std::string& exported,
                int64_t top_k, const std::vector<std::string>& images, const std::string& output, double threshold) {
  const char* usage = " (usage: trainrun predict RECIPE.yaml --checkpoint PATH IMAGE... | trainrun predict --model EXPORTED.pt IMAGE...)";
  // `predict RECIPE [overrides] IMAGE...`: overrides contain '=', image paths are the rest;
  // `predict --model FILE IMAGE...`: all are images.
  std::vector<std::string> recipe_part, named = images;
  for (std::size_t i = 0; i < args.size(); ++i)
    (exported.empty() && (i == 0 || args[i].find('=') != std::string::npos) ? recipe_part : named).push_back(args[i]);
  if (!exported.empty() && !checkpoint.empty())
    throw RecipeError(std::string("predict: --model and --checkpoint exclude each other") + usage);
  if (exported.empty() && (recipe_part.empty() || checkpoint.empty()))
    throw RecipeError(std::string("predict: a recipe and --checkpoint, or --model, are needed") + usage);
  if (named.empty()) throw RecipeError(std::string("predict: no image files given") + usage);
  const std::vector<std::string> files = image_files(named);
  if (top_k < 1) throw RecipeError("predict: --top-k must be at least 1");
  if (!output.empty()) check_results_file(output);
  const Results results = exported.empty() ? predict_with_recipe(recipe_part, checkpoint, top_k, files, threshold)
                                           : predict_with_export(exported, top_k, files, threshold);
  if (!output.empty())
    write_results(output, results.rows, results.rows.empty() ? top_k : int64_t(results.rows[0].index.size()));
  return results.skipped ? kExitFailed : kExitOk;
}

}  // namespace trainrun::cli
