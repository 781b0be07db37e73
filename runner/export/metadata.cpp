#include "runner/export/metadata.h"

#include "runner/io/labels.h"
#include "runner/io/thresholds.h"
#include "runner/recipe/job.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <regex>

namespace trainrun {
namespace {

using json = nlohmann::ordered_json;

// A resolved recipe's node as JSON: numbers, booleans and null by their YAML reading, the rest strings.
json json_of(const YAML::Node& node) {
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(json_of(item));
    return out;
  }
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& kv : node) out[kv.first.as<std::string>()] = json_of(kv.second);
    return out;
  }
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  const std::string& text = node.Scalar();
  static const std::regex integer(R"([-+]?[0-9]+)"), number(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (node.Tag() != "!" && std::regex_match(text, integer)) return node.as<int64_t>();
  if (node.Tag() != "!" && std::regex_match(text, number)) return node.as<double>();
  if (node.Tag() != "!" && (text == "true" || text == "false")) return node.as<bool>();
  return text;
}

// And back, for the transforms' factories.
YAML::Node yaml_of(const nlohmann::json& j) {
  YAML::Node out;
  if (j.is_array()) {
    out = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& item : j) out.push_back(yaml_of(item));
  } else if (j.is_object()) {
    out = YAML::Node(YAML::NodeType::Map);
    for (const auto& [key, value] : j.items()) out[key] = yaml_of(value);
  } else if (j.is_null()) {
    out = YAML::Node(YAML::NodeType::Null);
  } else {
    out = j.is_string() ? j.get<std::string>() : j.dump();
  }
  return out;
}

// The parameters of the first step named `name` in a transform list, or null.
json step_params(const json& list, const std::string& name) {
  for (const auto& step : list)
    if (step.is_object() && step.contains(name)) return step[name];
  return nullptr;
}

// preprocess.json from the eval pipeline: the terms torchvision's Resize/CenterCrop/Normalize and
// timm's data config use.
json preprocess_of(const json& transforms, const InputConfig& input) {
  const json resize = step_params(transforms, "resize"), crop = step_params(transforms, "center_crop");
  const json normalize = step_params(transforms, "normalize");
  json out;
  out["input_size"] = input.input_size;
  out["interpolation"] = resize.is_null() ? json(nullptr) : resize.value("interpolation", json("bilinear"));
  out["resize"] = resize.is_null() ? json(nullptr) : resize["size"];
  out["crop"] = crop.is_null() ? json(nullptr) : crop["size"];
  const bool scalars = !resize.is_null() && !crop.is_null() && resize["size"].is_number() && crop["size"].is_number();
  out["crop_pct"] = scalars ? json(crop["size"].get<double>() / resize["size"].get<double>()) : json(nullptr);
  out["mean"] = normalize.is_null() ? json(nullptr) : normalize["mean"];
  out["std"] = normalize.is_null() ? json(nullptr) : normalize["std"];
  out["transforms"] = transforms;
  return out;
}

nlohmann::json parse_member(const std::string& text, const std::string& member, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw RecipeError(file + ": " + member + " is not JSON: " + e.what());
  }
}

}  // namespace

std::map<std::string, std::string> export_metadata(const Job& job, const std::string& weights,
                                                   const std::vector<int64_t>& input_size) {
  InputConfig input = job.model->input_config();
  input.input_size = input_size;
  const json transforms = json_of(job.recipe.root["data"]["eval_transforms"]);
  json info;
  info["format"] = "trainrun-export/1";
  info["trainrun_version"] = TRAINRUN_VERSION;
  info["model"] = job.recipe.root["model"]["name"].as<std::string>();
  info["num_classes"] = job.recipe.root["model"]["num_classes"].as<int64_t>();
  info["outputs"] = job.model->outputs_log_probs() ? "log_probs" : "logits";
  const bool multilabel = job.config.train.task == "multilabel";
  info["task"] = job.config.train.task;
  info["activation"] = multilabel ? "sigmoid" : "softmax";
  if (multilabel) info["threshold"] = job.config.train.threshold;
  if (multilabel)
    if (auto tuned = tuned_thresholds(weights, job.data.classes)) info["thresholds"] = *tuned;
  info["input_size"] = input.input_size;
  info["model_mean"] = input.mean;
  info["model_std"] = input.std;
  info["eval_transforms"] = transforms;
  info["weights"] = weights;
  json labels = json::object();
  for (std::size_t i = 0; i < job.data.classes.size(); ++i) labels[std::to_string(i)] = job.data.classes[i];
  return {{"trainrun.json", info.dump(2) + "\n"},
          {"preprocess.json", preprocess_of(transforms, input).dump(2) + "\n"},
          {"labels.json", labels.dump(2) + "\n"}};
}

ExportedPipeline exported_pipeline(const std::string& trainrun_json, const std::string& labels_json, const std::string& file) {
  if (trainrun_json.empty())
    throw RecipeError(file + ": not a model trainrun exported (no trainrun.json among its extra files): "
                             "predict --model reads `trainrun export --format torchscript` files");
  const nlohmann::json info = parse_member(trainrun_json, "trainrun.json", file);
  if (!info.is_object() || info.value("format", "") != "trainrun-export/1")
    throw RecipeError(file + ": trainrun.json is not a trainrun export's (format trainrun-export/1)");
  ExportedPipeline out;
  try {
    out.channels = info.at("input_size").at(0).get<int64_t>();
    out.log_probs = info.at("outputs").get<std::string>() == "log_probs";
    out.multilabel = info.value("task", "single_label") == "multilabel";  // exports before 0.2 have no task
    out.threshold = info.value("threshold", 0.5);
    if (info.contains("thresholds")) out.thresholds = info["thresholds"].get<std::vector<double>>();
    ModelInput model{info.at("model_mean").get<std::vector<double>>(), info.at("model_std").get<std::vector<double>>()};
    out.eval_transforms = build_transforms(yaml_of(info.at("eval_transforms")), model, file + ": trainrun.json eval_transforms");
  } catch (const nlohmann::json::exception& e) {
    throw RecipeError(file + ": trainrun.json: " + e.what());
  } catch (const std::out_of_range& e) {  // a transform this build does not have (a plugin's)
    throw RecipeError(file + ": trainrun.json eval_transforms: " + e.what());
  }
  if (!labels_json.empty()) out.classes = labels_of(parse_member(labels_json, "labels.json", file), file + ": labels.json");
  if (!out.thresholds.empty() && out.thresholds.size() != out.classes.size())
    throw RecipeError(file + ": trainrun.json has " + std::to_string(out.thresholds.size()) + " thresholds for " +
                      std::to_string(out.classes.size()) + " classes");
  return out;
}

}  // namespace trainrun
