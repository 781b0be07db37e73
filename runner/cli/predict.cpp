// `trainrun predict RECIPE.yaml --checkpoint PATH IMAGE...`: one JSON line per image, in the order
// given (SPEC §1), with the top-k classes, their scores and the raw logits.
#include "components/data/image.h"
#include "runner/cli/commands.h"
#include "runner/io/weights.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// labels.json as a run writes it: {"0": "cat", "1": "dog", ...}, every index from 0 once.
std::vector<std::string> labels_of(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || j.empty()) throw DataError(file + ": not a labels file: expected {\"0\": \"class name\", ...}");
  std::vector<std::string> labels(j.size());
  std::vector<bool> seen(j.size());
  for (auto& [index, name] : j.items()) {
    const bool digits = !index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos;
    const std::size_t i = digits ? std::stoul(index) : labels.size();
    if (i >= labels.size() || seen[i])
      throw DataError(file + ": not a labels file: key '" + index + "' is not a class index from 0 to " +
                      std::to_string(labels.size() - 1) + " (each once)");
    if (!name.is_string()) throw DataError(file + ": not a labels file: the name of class " + index + " is not a string");
    labels[i] = name.get<std::string>();
    seen[i] = true;
  }
  return labels;
}

// The run's labels.json beside the weights (a run folder) or one level up (a checkpoint folder
// inside one); empty when there is none.
std::vector<std::string> run_labels(const std::string& weights) {
  fs::path dir = fs::path(weights).parent_path();
  for (const fs::path& candidate : {dir / "labels.json", dir.parent_path() / "labels.json"}) {
    if (!fs::is_regular_file(candidate)) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(std::ifstream(candidate));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(candidate.string() + ": not a labels file: " + e.what());
    }
    return labels_of(j, candidate.string());
  }
  return {};
}

// Scores are softmax probabilities; "logits" is the model's raw output (log-probabilities for
// basicnet).
int predict_images(const std::vector<std::string>& args, const std::string& checkpoint, int64_t top_k,
                   const std::vector<std::string>& images) {
  for (auto& image : images)
    if (!fs::is_regular_file(image)) throw RecipeError("predict: " + image + ": no such file");
  if (top_k < 1) throw RecipeError("predict: --top-k must be at least 1");
  std::string file = weights_file(checkpoint);
  JobOptions options;
  options.pretrained = false;
  options.classes = run_labels(file);
  options.data = options.classes.empty();  // without labels.json the dataset names the classes
  Job job = load_job(args, options);
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  job.model->eval();
  torch::NoGradGuard no_grad;
  const bool skip_bad = job.config.data.skip_bad_files;
  const int64_t channels = job.model->input_config().input_size.at(0);
  int64_t skipped = 0;
  for (auto& image : images) {
    at::Tensor pixels;
    try {
      pixels = decode_image(image, channels);
    } catch (const DataError& e) {
      if (!skip_bad) throw;
      std::cerr << "warning: " << e.what() << " (skipped)\n";  // stdout holds only the JSON lines
      ++skipped;
      continue;
    }
    Rng rng(0);  // eval transforms draw nothing
    at::Tensor out = job.model->forward(job.eval_transforms(pixels, rng).unsqueeze(0).to(job.device))[0].to(at::kFloat).cpu();
    at::Tensor probs = job.model->outputs_log_probs() ? out.exp() : out.softmax(0);
    auto [scores, indices] = probs.topk(std::min<int64_t>(top_k, probs.size(0)));
    auto label = [&](int64_t i) { return std::size_t(i) < job.data.classes.size() ? job.data.classes[std::size_t(i)] : std::to_string(i); };
    nlohmann::ordered_json topk = nlohmann::ordered_json::array();
    for (int64_t k = 0; k < indices.size(0); ++k)
      topk.push_back({{"label", label(indices[k].item<int64_t>())}, {"index", indices[k].item<int64_t>()}, {"score", scores[k].item<double>()}});
    std::vector<double> logits(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
    nlohmann::ordered_json line{{"file", image}, {"label", topk[0]["label"]}, {"index", topk[0]["index"]},
                                {"score", topk[0]["score"]}, {"topk", topk}, {"logits", logits}};
    std::cout << line.dump() << std::endl;
  }
  return skipped ? 1 : 0;
}

}  // namespace

int cmd_predict(const std::vector<std::string>& args, const std::string& checkpoint, int64_t top_k,
                const std::vector<std::string>& images) {
  // `predict RECIPE [overrides] IMAGE...`: overrides contain '=', image paths are the rest.
  std::vector<std::string> recipe_part, files = images;
  for (std::size_t i = 0; i < args.size(); ++i)
    (i == 0 || args[i].find('=') != std::string::npos ? recipe_part : files).push_back(args[i]);
  if (files.empty()) throw RecipeError("predict: no image files given (usage: trainrun predict RECIPE.yaml --checkpoint PATH IMAGE...)");
  return predict_images(recipe_part, checkpoint, top_k, files);
}

}  // namespace trainrun::cli
