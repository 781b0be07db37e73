// What an exported model carries beside its graph and weights, so it classifies images without
// the recipe (TorchScript extra files, ONNX metadata_props; README "Export and serve"):
//   trainrun.json    {format, trainrun_version, model, num_classes, outputs: logits | log_probs,
//                     task: single_label | multilabel, activation: softmax | sigmoid (what turns the
//                     outputs into scores), threshold (multilabel: a class is predicted where its
//                     sigmoid is above it), thresholds (multilabel, after `eval --tune-thresholds`:
//                     one per class in index order, from thresholds.json; they replace `threshold`),
//                     input_size [C, H, W], eval_transforms (the resolved recipe's list), weights}
//   preprocess.json  the eval preprocessing in torchvision/timm terms: {input_size, interpolation,
//                     resize, crop, crop_pct, mean, std} (null where the pipeline has no such step)
//   labels.json      {"0": "class name", ...}, as a run writes it
#pragma once

#include "components/data/transform.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainrun {

struct Job;

// The three files (name -> JSON text) for `job`'s model with the weights of `weights`, taking
// inputs of `input_size` (C, H, W: what the eval pipeline makes).
std::map<std::string, std::string> export_metadata(const Job& job, const std::string& weights,
                                                   const std::vector<int64_t>& input_size);

// What `trainrun predict --model` needs back from an export's trainrun.json and labels.json
// (`file` names the export in errors: RecipeError for a file trainrun did not write).
struct ExportedPipeline {
  Compose eval_transforms;
  int64_t channels = 3;
  bool log_probs = false;
  bool multilabel = false;  // sigmoid scores, every class above `threshold` predicted
  double threshold = 0.5;
  std::vector<double> thresholds;  // per class when tuned; empty: `threshold` for all
  std::vector<std::string> classes;
};
ExportedPipeline exported_pipeline(const std::string& trainrun_json, const std::string& labels_json, const std::string& file);

}  // namespace trainrun
