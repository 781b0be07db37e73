// `trainrun export --format hub`: a run's model as the folder a Hugging Face Hub model repository
// holds, laid out as timm's push_to_hf_hub uploads one (timm/models/_hub.py save_for_hf), so that
// timm.create_model("hf-hub:ORG/NAME", pretrained=True) once uploaded, or
// timm.create_model("local-dir:DIR", pretrained=True) before, builds it with these weights:
//   model.safetensors    the weights, as the run wrote them (timm's key names)
//   config.json          timm's format: architecture, num_classes, num_features, label_names,
//                        pretrained_cfg (input_size, interpolation, crop_pct, crop_mode, mean, std,
//                        classifier), and trainrun's own block (task, threshold(s), trainrun_version)
//   README.md            the model card (model_card.h), generated from the run folder alone
//   training_curves.png  the training and evaluation loss by step (curves.h)
//   recipe.yaml          the resolved recipe the run trained with
//   labels.json          class index -> name, as the run wrote it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

struct Job;

struct HubFolderOptions {
  std::string repo;              // ORG/NAME for the card's snippets; empty: local-dir:DIR
  std::string license = "other";  // the card's `license:` (a Hub license id)
};

// Writes the folder `dir` (new or empty) for the weights `weights` (a run's or a checkpoint's
// model.safetensors); `input_size` is what the eval pipeline hands the model (C, H, W). Returns
// the files written, in order. RecipeError for a folder that is not empty.
std::vector<std::string> write_hub_folder(const Job& job, const std::string& weights, const std::vector<int64_t>& input_size,
                                          const std::string& dir, const HubFolderOptions& options);

}  // namespace trainrun
