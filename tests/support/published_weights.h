// A model's published weights as tests/py/hub_server.py serves them for `pretrained: true`: the
// model built with its defaults and 1000 classes (random initialisation), its state dict written
// to a safetensors file, and the config.json timm's push_to_hf_hub writes beside the weights
// (`eval_transforms: model` reads it).
#pragma once

#include "components/models/model.h"
#include "registry/registry.h"
#include "runner/io/weights.h"
#include "support/safetensors.h"
#include "test_util.h"

namespace trainrun::test {

struct PublishedWeights {
  std::string repo;         // e.g. timm/resnet18.tv_in1k, from the model's published_weights()
  nlohmann::json revisions; // hub_server.py's "revisions" of that repo: "main" with the two files
};

inline PublishedWeights publish_weights(const std::string& model_name, const fs::path& weights, const std::string& commit) {
  const auto& entry = Registry<Classifier>::instance().get(model_name);
  YAML::Node cfg;
  for (auto& p : entry.schema.params())
    cfg[p.name] = p.name == "num_classes" ? YAML::Node(1000) : YAML::Clone(p.default_value);
  auto model = entry.make(Config(cfg, "model"));
  save_safetensors(weights.string(), state_dict(*model));
  const InputConfig in = model->input_config();
  const nlohmann::json config_json = {
      {"architecture", model_name}, {"num_classes", 1000},
      {"pretrained_cfg", {{"input_size", in.input_size}, {"interpolation", in.interpolation}, {"crop_pct", in.crop_pct},
                          {"crop_mode", "center"}, {"mean", in.mean}, {"std", in.std}, {"num_classes", 1000}}}};
  PublishedWeights out;
  out.repo = model->published_weights().substr(std::string("hf-hub:").size());
  out.revisions = {{"main",
                    {{"commit", commit},
                     {"files", {{"model.safetensors", {{"path", weights.string()}}},
                                {"config.json", {{"text", config_json.dump(2)}, {"lfs", false}}}}}}}};
  return out;
}

}  // namespace trainrun::test
