// Metrics of a multi-label evaluation (train.task: multilabel), as scikit-learn computes them on
// the same scores: average precision per class and its macro and micro means
// (average_precision_score), and at a threshold per class the F1 (macro, micro, samples), the
// macro precision and recall (f1_score, precision_score, recall_score with zero_division=0) and
// the exact-match accuracy (accuracy_score). An example is predicted to have a class when its
// score passes the class's threshold (score > threshold, as torchmetrics' multilabel metrics).
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace trainrun {

// The metric names train.metrics takes for a multilabel run, in the order the log writes them.
const std::vector<std::string>& multilabel_metric_names();

// sklearn's average_precision_score of one binary problem: the sum over the distinct scores, from
// the highest, of (R_k - R_{k-1}) P_k. `scores` and `truth` are 1-D, truth 0/1. Without a
// positive example the value is 0 (sklearn warns and gives -0.0).
double average_precision(const at::Tensor& scores, const at::Tensor& truth);

// `trainrun eval --tune-thresholds`: for one class, the threshold at which F1 on these scores is
// highest (sklearn's precision_recall_curve, F1 = 2PR / (P + R), its argmax; the lowest of tied
// thresholds), placed halfway between the last score taken and the next lower one so that
// `score > threshold` takes the same examples as sklearn's `score >= t`. A class without a
// positive example keeps `fallback` (tuned false).
struct TunedThreshold {
  double threshold;
  double f1;  // at the threshold, on these scores
  bool tuned;
};
TunedThreshold best_f1_threshold(const at::Tensor& scores, const at::Tensor& truth, double fallback);

struct MultilabelEvaluation {
  std::map<std::string, double> metrics;  // map, map_micro, f1_macro, f1_micro, f1_samples, precision, recall, accuracy
  std::vector<double> ap;                 // per class
  std::vector<double> f1, precision, recall;  // per class, at the thresholds
  std::vector<int64_t> support;           // positive examples per class
  std::vector<double> thresholds;         // per class
};

// `scores` N x C (sigmoid probabilities), `targets` N x C 0/1 (multi-hot), `thresholds` one per
// class (or one for all).
MultilabelEvaluation evaluate_multilabel(const at::Tensor& scores, const at::Tensor& targets,
                                         const std::vector<double>& thresholds);

// The per-class table `trainrun eval` prints (AP, precision, recall, F1, support, as
// classification_report lays its columns out, and the class's threshold), then the averages.
std::string multilabel_report_text(const MultilabelEvaluation& e, const std::vector<std::string>& classes);
// The same for eval_report.json: {"classes": {name: {ap, precision, recall, f1-score, support, threshold}}, and each metric}.
nlohmann::ordered_json multilabel_report_json(const MultilabelEvaluation& e, const std::vector<std::string>& classes);

}  // namespace trainrun
