#include "runner/export/hub_folder.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/export/curves.h"
#include "runner/export/metadata.h"
#include "runner/export/model_card.h"
#include "runner/io/thresholds.h"
#include "runner/recipe/job.h"
#include "runner/recipe/resolve.h"
#include "support/durable_file.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fnmatch.h>

#include <filesystem>
#include <fstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// The run folder of a run's or a checkpoint's weights, and the weights' step (none: the run's
// final weights, every line of metrics.jsonl).
struct RunOf {
  fs::path dir;
  std::optional<int64_t> step;
};

RunOf run_of(const std::string& weights) {
  const fs::path folder = fs::path(weights).parent_path();
  if (fs::is_regular_file(folder / kStateFile) && fs::is_regular_file(folder.parent_path() / "metrics.jsonl")) {
    const auto state = nlohmann::json::parse(std::ifstream(folder / kStateFile), nullptr, false);
    if (state.is_object() && state.contains("global_step")) return {folder.parent_path(), state["global_step"].get<int64_t>()};
  }
  return {folder, std::nullopt};
}

std::vector<nlohmann::json> run_lines(const RunOf& run) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run.dir / "metrics.jsonl");
  for (std::string text; std::getline(in, text);) {
    nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_object() || (run.step && line.value("step", int64_t(0)) > *run.step)) continue;
    out.push_back(std::move(line));
  }
  return out;
}

// The classifier's module ("fc", "head.fc") and its input features, from the head's weight.
std::pair<std::string, int64_t> classifier_of(Classifier& model) {
  const std::string pattern = model.classifier_pattern();
  for (const auto& p : model.named_parameters())
    if (p.value().dim() == 2 && p.key().size() > 7 && p.key().substr(p.key().size() - 7) == ".weight" &&
        fnmatch(pattern.c_str(), p.key().c_str(), 0) == 0)
      return {p.key().substr(0, p.key().size() - 7), p.value().size(1)};
  return {"", 0};
}

// config.json as timm's save_config_for_hf writes it, the eval preprocessing as pretrained_cfg.
json timm_config(const Job& job, const std::string& weights, const std::vector<int64_t>& input_size) {
  const auto meta = export_metadata(job, weights, input_size);
  const json pre = json::parse(meta.at("preprocess.json"));
  const InputConfig model_input = job.model->input_config();
  const auto [classifier, features] = classifier_of(*job.model);
  json cfg;
  cfg["architecture"] = job.recipe.root["model"]["name"].as<std::string>();
  cfg["num_classes"] = job.recipe.root["model"]["num_classes"].as<int64_t>();
  if (features > 0) cfg["num_features"] = features;
  cfg["label_names"] = job.data.classes;
  json p;
  p["input_size"] = pre["input_size"];
  p["fixed_input_size"] = model_input.fixed_input_size;
  p["interpolation"] = pre["interpolation"].is_null() ? json(model_input.interpolation) : pre["interpolation"];
  p["crop_pct"] = pre["crop_pct"].is_null() ? json(model_input.crop_pct) : pre["crop_pct"];
  p["crop_mode"] = "center";
  p["mean"] = pre["mean"].is_null() ? json(model_input.mean) : pre["mean"];
  p["std"] = pre["std"].is_null() ? json(model_input.std) : pre["std"];
  p["num_classes"] = cfg["num_classes"];
  if (!classifier.empty()) p["classifier"] = classifier;
  cfg["pretrained_cfg"] = p;
  const json info = json::parse(meta.at("trainrun.json"));
  json own{{"trainrun_version", info["trainrun_version"]}, {"task", info["task"]}, {"activation", info["activation"]}};
  for (const char* key : {"threshold", "thresholds"})
    if (info.contains(key)) own[key] = info[key];
  cfg["trainrun"] = own;
  return cfg;
}

void check_empty(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec)))
    throw RecipeError("export --format hub: --output " + dir.string() + " is not an empty folder (nothing written)");
}

}  // namespace

std::vector<std::string> write_hub_folder(const Job& job, const std::string& weights, const std::vector<int64_t>& input_size,
                                          const std::string& dir, const HubFolderOptions& options) {
  const fs::path out = dir;
  check_empty(out);
  const RunOf run = run_of(weights);
  ModelCardInputs card;
  card.recipe = job.recipe.root;
  card.lines = run_lines(run);
  card.classes = job.data.classes;
  card.load_id = options.repo.empty() ? "local-dir:" + fs::absolute(out).lexically_normal().string() : "hf-hub:" + options.repo;
  card.license = options.license;
  card.published = job.model->published_weights();
  card.weights_from = fs::relative(weights, run.dir).string();
  const std::string curves = training_curves_png(card.lines);
  card.curves = !curves.empty();
  const json config = timm_config(job, weights, input_size);
  json labels = json::object();
  for (std::size_t i = 0; i < job.data.classes.size(); ++i) labels[std::to_string(i)] = job.data.classes[i];
  const fs::path resolved = run.dir / "recipe.resolved.yaml";
  std::ifstream recipe_in(resolved);
  const std::string recipe = fs::is_regular_file(resolved) ? std::string(std::istreambuf_iterator<char>(recipe_in), {})
                                                           : resolved_recipe_text(job);
  std::ifstream weights_in(weights, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(weights_in)), {});
  std::vector<std::pair<std::string, std::string>> files = {
      {"model.safetensors", bytes}, {"config.json", config.dump(2) + "\n"}, {"README.md", model_card(card)},
      {"recipe.yaml", recipe},      {"labels.json", labels.dump(2) + "\n"}};
  if (card.curves) files.insert(files.begin() + 3, {"training_curves.png", curves});
  fs::create_directories(out);
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    write_file_atomic(out / name, text);
    written.push_back(name);
  }
  return written;
}

}  // namespace trainrun
