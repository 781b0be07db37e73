// The model card (README.md) of `trainrun export --format hub`: YAML front matter as the Hub reads
// it (library_name: timm for the architectures timm builds, else trainrun; license, tags,
// datasets, metrics, base_model, pipeline_tag), then what was trained from which
// weights on which data, the final and best evaluation metrics, the hyper-parameters of the
// resolved recipe, the training time, the curves' picture, and how to load the model in Python
// (timm) and in trainrun. Everything comes from the run folder: the recipe and metrics.jsonl.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace trainrun {

struct ModelCardInputs {
  YAML::Node recipe;                     // the resolved recipe
  std::vector<nlohmann::json> lines;     // metrics.jsonl's lines up to the weights' step
  std::vector<std::string> classes;
  std::string load_id;                   // "hf-hub:ORG/NAME" or "local-dir:/path"
  std::string license;
  std::string published;                 // the architecture's published weights (Classifier::published_weights)
  std::string weights_from;              // the run folder's file the weights are ("model.safetensors", "checkpoint-40/...")
  bool curves = false;                   // training_curves.png is beside it
};

std::string model_card(const ModelCardInputs& in);

}  // namespace trainrun
