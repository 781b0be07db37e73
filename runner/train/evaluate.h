// Evaluation: one pass over this rank's eval shard, summed over ranks, and its metrics.jsonl line.
#pragma once

#include "runner/distributed/accelerator.h"
#include "runner/logging/multilabel_metrics.h"
#include "runner/recipe/job.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

class DataLoader;

struct EvalResult {
  std::map<std::string, double> metrics;  // eval_loss, eval_accuracy, eval_top5, ...
  int64_t examples = 0;
  // With keep_predictions: per example of this rank's shard, the target and the (up to) top-5
  // classes by decreasing score, for the classification report.
  std::vector<int64_t> targets;
  std::vector<std::vector<int64_t>> ranked;
  // Single-label: the confusion matrix of the whole eval split ([true][predicted], every rank's).
  std::vector<std::vector<int64_t>> confusion;
  // train.task: multilabel: every class's AP, F1, precision and recall over the whole eval split
  // (the scores gathered from every rank); eval_map & co are in `metrics`.
  std::optional<MultilabelEvaluation> multilabel;
  // With keep_predictions, multilabel: the gathered sigmoids and multi-hot targets (N x C), to
  // evaluate again at other thresholds.
  at::Tensor scores, truths;
};

// One pass over this rank's eval shard, summed over ranks: every example counts once.
EvalResult evaluate(Classifier& model, DataLoader& loader, const Loss& loss, const Job& job, const Accelerator& acc,
                    bool keep_predictions = false);

// Every example's class scores over the loader's split in its order, on the CPU ([N, classes]
// float): softmax probabilities (sigmoids for train.task: multilabel), as `predict` reports them.
at::Tensor predict_scores(Classifier& model, DataLoader& loader, const Job& job, const Accelerator& acc);

// train.metrics' per_class: the per-class table of an evaluation (single-label: precision, recall,
// F1 and support from the confusion matrix; multilabel: AP, precision, recall, F1, support), the
// layout of `trainrun eval`'s report.
std::string per_class_table(const EvalResult& r, const std::vector<std::string>& classes);

// An evaluation's log line: eval_loss, the metrics the recipe asks for (train.metrics), the
// runtime figures, eval_examples, epoch and step.
nlohmann::ordered_json eval_line(const EvalResult& r, const std::vector<std::string>& metrics, int64_t step,
                                 double epoch);

}  // namespace trainrun
