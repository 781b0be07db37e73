// thresholds.json: the per-class thresholds `trainrun eval --tune-thresholds` picks for a
// multilabel model's weights, written beside them; `trainrun eval`, `predict` and `export` of
// those weights read them back (a class is predicted where its sigmoid is above its threshold).
//   {"weights": "model.safetensors", "split": "validation", "criterion": "best F1 per class",
//    "thresholds": {"class name": 0.42, ...}, "f1": {"class name": 0.91 | null (not tuned), ...}}
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainrun {

constexpr const char* kThresholdsFile = "thresholds.json";

struct ClassThreshold {
  std::string name;
  double threshold;
  std::optional<double> f1;  // none: the class had no positive example, its threshold is train.threshold
};

// Writes thresholds.json beside `weights` (whole or not at all); returns its path.
std::string write_thresholds(const std::string& weights, const std::string& split, const std::vector<ClassThreshold>& t);

// The thresholds tuned for `weights`, in `classes`' order, from thresholds.json beside it; none
// when there is no such file or it was tuned for other weights in the folder (`note` then says
// so). DataError for a file that is not a thresholds file or lacks one of `classes`.
std::optional<std::vector<double>> tuned_thresholds(const std::string& weights, const std::vector<std::string>& classes,
                                                    std::string* note = nullptr);

}  // namespace trainrun
