#include "runner/logging/multilabel_metrics.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace trainrun {

const std::vector<std::string>& multilabel_metric_names() {
  static const std::vector<std::string> names = {"map",       "map_micro", "f1_macro", "f1_micro",
                                                 "f1_samples", "precision", "recall",   "accuracy"};
  return names;
}

namespace {

// The examples' indices by decreasing score (ties in their order).
std::vector<int64_t> descending(const double* sv, int64_t n) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return sv[a] > sv[b]; });
  return order;
}

}  // namespace

double average_precision(const at::Tensor& scores, const at::Tensor& truth) {
  const at::Tensor s = scores.to(at::kDouble).contiguous(), t = truth.to(at::kDouble).contiguous();
  const int64_t n = s.numel();
  const double* sv = s.data_ptr<double>();
  const double* tv = t.data_ptr<double>();
  const std::vector<int64_t> order = descending(sv, n);
  const double positives = std::accumulate(tv, tv + n, 0.0);
  if (positives == 0) return 0.0;
  // Walk the examples by decreasing score; at the last example of each distinct score, a point of
  // the precision-recall curve (tps / seen, tps / positives).
  double ap = 0, tps = 0, last_recall = 0;
  for (int64_t k = 0; k < n; ++k) {
    tps += tv[order[std::size_t(k)]];
    if (k + 1 < n && sv[order[std::size_t(k + 1)]] == sv[order[std::size_t(k)]]) continue;
    const double recall = tps / positives, precision = tps / double(k + 1);
    ap += (recall - last_recall) * precision;
    last_recall = recall;
  }
  return ap;
}

TunedThreshold best_f1_threshold(const at::Tensor& scores, const at::Tensor& truth, double fallback) {
  const at::Tensor s = scores.to(at::kDouble).contiguous(), t = truth.to(at::kDouble).contiguous();
  const int64_t n = s.numel();
  const double* sv = s.data_ptr<double>();
  const double* tv = t.data_ptr<double>();
  const double positives = std::accumulate(tv, tv + n, 0.0);
  if (positives == 0) return {fallback, 0.0, false};
  const std::vector<int64_t> order = descending(sv, n);
  // Predicting the examples down to the end of each distinct score: F1 = 2 tp / (tp + fp + P).
  // The lowest such score wins a tie, as argmax over precision_recall_curve's rising thresholds.
  double tps = 0, best_f1 = -1;
  int64_t best_end = 0;
  for (int64_t k = 0; k < n; ++k) {
    tps += tv[order[std::size_t(k)]];
    if (k + 1 < n && sv[order[std::size_t(k + 1)]] == sv[order[std::size_t(k)]]) continue;
    const double f1 = 2 * tps / (double(k + 1) + positives);
    if (f1 >= best_f1) best_f1 = f1, best_end = k;
  }
  // Halfway to the next lower score, so `score > threshold` takes exactly those examples.
  const double chosen = sv[order[std::size_t(best_end)]];
  const double below = best_end + 1 < n ? sv[order[std::size_t(best_end + 1)]] : std::min(0.0, chosen);
  double threshold = (chosen + below) / 2;
  if (!(threshold < chosen)) threshold = std::nextafter(chosen, -std::numeric_limits<double>::infinity());
  return {threshold, best_f1, true};
}

namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }  // zero_division=0

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

}  // namespace

MultilabelEvaluation evaluate_multilabel(const at::Tensor& scores, const at::Tensor& targets,
                                         const std::vector<double>& thresholds) {
  if (scores.dim() != 2 || scores.sizes() != targets.sizes())
    throw std::invalid_argument("multilabel metrics need N x C scores and targets of the same shape");
  const int64_t n = scores.size(0), classes = scores.size(1);
  if (thresholds.size() != 1 && int64_t(thresholds.size()) != classes)
    throw std::invalid_argument("multilabel metrics: " + std::to_string(thresholds.size()) + " thresholds for " +
                                std::to_string(classes) + " classes");
  at::Tensor thr = at::tensor(thresholds, at::kDouble);
  const at::Tensor s = scores.to(at::kDouble), y = targets.to(at::kDouble).gt(0.5);
  const at::Tensor pred = s.gt(thr.view({1, -1}));
  const at::Tensor tp = (pred & y).sum(0).to(at::kDouble), fp = (pred & ~y).sum(0).to(at::kDouble),
                   fn = (~pred & y).sum(0).to(at::kDouble);
  MultilabelEvaluation r;
  for (int64_t c = 0; c < classes; ++c) {
    r.ap.push_back(average_precision(s.select(1, c), y.select(1, c)));
    const double tpc = tp[c].item<double>(), fpc = fp[c].item<double>(), fnc = fn[c].item<double>();
    r.f1.push_back(ratio(2 * tpc, 2 * tpc + fpc + fnc));
    r.precision.push_back(ratio(tpc, tpc + fpc));
    r.recall.push_back(ratio(tpc, tpc + fnc));
    r.support.push_back(int64_t(tpc + fnc));
    r.thresholds.push_back(thresholds[thresholds.size() == 1 ? 0 : std::size_t(c)]);
  }
  const double TP = tp.sum().item<double>(), FP = fp.sum().item<double>(), FN = fn.sum().item<double>();
  // Per example: 2 tp / (|true| + |predicted|), 0 for an example with neither.
  const at::Tensor tp_i = (pred & y).sum(1).to(at::kDouble),
                   size_i = pred.sum(1).to(at::kDouble) + y.sum(1).to(at::kDouble);
  const at::Tensor f1_i = at::where(size_i > 0, 2 * tp_i / size_i.clamp_min(1), at::zeros_like(size_i));
  r.metrics["map"] = mean(r.ap);
  r.metrics["map_micro"] = average_precision(s.reshape(-1), y.reshape(-1));
  r.metrics["f1_macro"] = mean(r.f1);
  r.metrics["f1_micro"] = ratio(2 * TP, 2 * TP + FP + FN);
  r.metrics["f1_samples"] = n > 0 ? f1_i.mean().item<double>() : 0.0;
  r.metrics["precision"] = mean(r.precision);
  r.metrics["recall"] = mean(r.recall);
  r.metrics["accuracy"] = n > 0 ? pred.eq(y).all(1).to(at::kDouble).mean().item<double>() : 0.0;
  return r;
}

std::string multilabel_report_text(const MultilabelEvaluation& e, const std::vector<std::string>& classes) {
  std::size_t width = std::string("f1 (samples)").size();
  for (const auto& c : classes) width = std::max(width, c.size());
  std::string out = fmt::format("{:>{}} ", "", width);
  for (const char* h : {"AP", "precision", "recall", "f1-score", "support", "threshold"}) out += fmt::format(" {:>9}", h);
  out += "\n\n";
  for (std::size_t c = 0; c < e.ap.size(); ++c)
    out += fmt::format("{:>{}}  {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9} {:>9.4f}\n",
                       c < classes.size() ? classes[c] : std::to_string(c), width, e.ap[c], e.precision[c], e.recall[c],
                       e.f1[c], e.support[c], e.thresholds[c]);
  out += "\n";
  const auto& m = e.metrics;
  out += fmt::format("{:>{}}  {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f}\n", "macro avg", width, m.at("map"), m.at("precision"),
                     m.at("recall"), m.at("f1_macro"));
  out += fmt::format("{:>{}}  {:>9.4f} {:>9} {:>9} {:>9.4f}\n", "micro avg", width, m.at("map_micro"), "", "", m.at("f1_micro"));
  out += fmt::format("{:>{}}  {:>9} {:>9} {:>9} {:>9.4f}\n", "f1 (samples)", width, "", "", "", m.at("f1_samples"));
  out += fmt::format("{:>{}}  {:>9.4f}  (every label of an image right)\n", "accuracy", width, m.at("accuracy"));
  return out;
}

nlohmann::ordered_json multilabel_report_json(const MultilabelEvaluation& e, const std::vector<std::string>& classes) {
  nlohmann::ordered_json j;
  for (const std::string& name : multilabel_metric_names()) j[name] = e.metrics.at(name);
  nlohmann::ordered_json per = nlohmann::ordered_json::object();
  for (std::size_t c = 0; c < e.ap.size(); ++c)
    per[c < classes.size() ? classes[c] : std::to_string(c)] = {{"ap", e.ap[c]},         {"precision", e.precision[c]},
                                                                {"recall", e.recall[c]}, {"f1-score", e.f1[c]},
                                                                {"support", e.support[c]}, {"threshold", e.thresholds[c]}};
  j["classes"] = per;
  return j;
}

}  // namespace trainrun
