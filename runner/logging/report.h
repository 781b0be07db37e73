// `trainrun eval`'s per-class report: sklearn.metrics.classification_report (precision, recall,
// F1, support; accuracy, macro and weighted averages) plus top-1/top-5 accuracy and the
// confusion matrix, as text for the console and as JSON for eval_report.json.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainrun {

struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;
};

struct ClassificationReport {
  std::vector<std::string> classes;
  std::vector<ClassScores> per_class;
  ClassScores macro_avg, weighted_avg;
  double accuracy = 0, top5_accuracy = 0;
  int64_t examples = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]

  // sklearn's text layout (classification_report(..., digits=digits)).
  std::string text(int digits = 4) const;
  // {"accuracy", "top5_accuracy", "examples", "classes": {name: {precision, recall, f1-score,
  // support}}, "macro avg", "weighted avg", "confusion_matrix"}.
  nlohmann::ordered_json json() const;
};

// `targets` and `ranked` (per example, class indices by decreasing score; at least one) of the
// same length. Every class in `classes` gets a row, as sklearn with labels=range(n) and
// zero_division=0: a class never predicted has precision 0, one never present recall 0.
ClassificationReport classification_report(const std::vector<int64_t>& targets,
                                           const std::vector<std::vector<int64_t>>& ranked,
                                           const std::vector<std::string>& classes);

// The report of a confusion matrix ([true class][predicted class] counts): every figure but
// top5_accuracy (0), which needs the ranked classes (a training evaluation's per_class table).
ClassificationReport report_of_confusion(std::vector<std::vector<int64_t>> confusion, const std::vector<std::string>& classes);

// The single-label recipe metrics a confusion matrix ([true class][predicted class] counts) gives:
// f1_macro as sklearn's f1_score(y, pred, average="macro", zero_division=0), the mean F1 over the
// classes that occur in y or pred (torchmetrics' MulticlassF1Score(average="macro") leaves the
// others out too); balanced_accuracy as balanced_accuracy_score, the mean recall over the classes
// that occur in y.
std::map<std::string, double> confusion_metrics(const std::vector<std::vector<int64_t>>& confusion);

}  // namespace trainrun
