#include "runner/logging/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace trainrun {

namespace {

// sklearn's precision_recall_fscore_support formulas, in its order of operations, with
// zero_division=0.
double ratio(int64_t num, int64_t den) { return den == 0 ? 0.0 : double(num) / double(den); }
double f1_score(double p, double r) {
  double denom = 1.0 * p + r;
  return denom == 0.0 ? 0.0 : (1.0 + 1.0) * p * r / denom;
}

ClassScores average(const std::vector<ClassScores>& rows, bool weighted) {
  ClassScores avg;
  double weight = 0;
  for (auto& c : rows) {
    double w = weighted ? double(c.support) : 1.0;
    avg.precision += c.precision * w, avg.recall += c.recall * w, avg.f1 += c.f1 * w;
    weight += w;
    avg.support += c.support;
  }
  if (weight > 0) avg.precision /= weight, avg.recall /= weight, avg.f1 /= weight;
  return avg;
}

nlohmann::ordered_json scores_json(const ClassScores& s) {
  return {{"precision", s.precision}, {"recall", s.recall}, {"f1-score", s.f1}, {"support", s.support}};
}

}  // namespace

ClassificationReport classification_report(const std::vector<int64_t>& targets,
                                           const std::vector<std::vector<int64_t>>& ranked,
                                           const std::vector<std::string>& classes) {
  if (targets.size() != ranked.size()) throw std::invalid_argument("classification_report: targets and predictions differ in length");
  const std::size_t n = classes.size();
  std::vector<std::vector<int64_t>> confusion(n, std::vector<int64_t>(n, 0));
  int64_t top5 = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    int64_t t = targets[i], p = ranked[i].at(0);
    if (t < 0 || std::size_t(t) >= n || p < 0 || std::size_t(p) >= n)
      throw std::invalid_argument("classification_report: class index out of range");
    ++confusion[std::size_t(t)][std::size_t(p)];
    auto end = ranked[i].begin() + std::min<std::ptrdiff_t>(5, std::ptrdiff_t(ranked[i].size()));
    top5 += std::find(ranked[i].begin(), end, t) != end;
  }
  ClassificationReport r = report_of_confusion(std::move(confusion), classes);
  r.top5_accuracy = ratio(top5, r.examples);
  return r;
}

ClassificationReport report_of_confusion(std::vector<std::vector<int64_t>> confusion, const std::vector<std::string>& classes) {
  const std::size_t n = classes.size();
  if (confusion.size() != n) throw std::invalid_argument("report_of_confusion: the matrix and the classes differ in size");
  ClassificationReport r;
  r.classes = classes;
  r.confusion = std::move(confusion);
  int64_t correct = 0;
  for (std::size_t c = 0; c < n; ++c) {
    correct += r.confusion[c][c];
    for (int64_t count : r.confusion[c]) r.examples += count;
  }
  r.accuracy = ratio(correct, r.examples);
  for (std::size_t c = 0; c < n; ++c) {
    int64_t tp = r.confusion[c][c], predicted = 0, actual = 0;
    for (std::size_t k = 0; k < n; ++k) predicted += r.confusion[k][c], actual += r.confusion[c][k];
    ClassScores s;
    s.precision = ratio(tp, predicted);
    s.recall = ratio(tp, actual);
    s.f1 = f1_score(s.precision, s.recall);
    s.support = actual;
    r.per_class.push_back(s);
  }
  r.macro_avg = average(r.per_class, false);
  r.weighted_avg = average(r.per_class, true);
  return r;
}

std::map<std::string, double> confusion_metrics(const std::vector<std::vector<int64_t>>& confusion) {
  const std::size_t n = confusion.size();
  double f1_sum = 0, recall_sum = 0;
  int64_t f1_classes = 0, recall_classes = 0;
  for (std::size_t c = 0; c < n; ++c) {
    if (confusion[c].size() != n) throw std::invalid_argument("confusion_metrics: the confusion matrix is not square");
    int64_t tp = confusion[c][c], predicted = 0, actual = 0;
    for (std::size_t k = 0; k < n; ++k) predicted += confusion[k][c], actual += confusion[c][k];
    if (predicted + actual > 0) f1_sum += f1_score(ratio(tp, predicted), ratio(tp, actual)), ++f1_classes;
    if (actual > 0) recall_sum += ratio(tp, actual), ++recall_classes;
  }
  return {{"f1_macro", f1_classes ? f1_sum / double(f1_classes) : 0.0},
          {"balanced_accuracy", recall_classes ? recall_sum / double(recall_classes) : 0.0}};
}

std::string ClassificationReport::text(int digits) const {
  std::size_t width = std::max<std::size_t>(std::string("weighted avg").size(), std::size_t(digits));
  for (auto& c : classes) width = std::max(width, c.size());
  std::string out = fmt::format("{:>{}} ", "", width);
  for (const char* h : {"precision", "recall", "f1-score", "support"}) out += fmt::format(" {:>9}", h);
  out += "\n\n";
  auto row = [&](const std::string& name, const ClassScores& s) {
    return fmt::format("{:>{}}  {:>9.{}f} {:>9.{}f} {:>9.{}f} {:>9}\n", name, width, s.precision, digits, s.recall,
                       digits, s.f1, digits, s.support);
  };
  for (std::size_t c = 0; c < classes.size(); ++c) out += row(classes[c], per_class[c]);
  out += "\n";
  out += fmt::format("{:>{}}  {:>9} {:>9} {:>9.{}f} {:>9}\n", "accuracy", width, "", "", accuracy, digits, examples);
  out += row("macro avg", macro_avg);
  out += row("weighted avg", weighted_avg);
  return out;
}

nlohmann::ordered_json ClassificationReport::json() const {
  nlohmann::ordered_json j;
  j["accuracy"] = accuracy;
  j["top5_accuracy"] = top5_accuracy;
  j["examples"] = examples;
  nlohmann::ordered_json per = nlohmann::ordered_json::object();
  for (std::size_t c = 0; c < classes.size(); ++c) per[classes[c]] = scores_json(per_class[c]);
  j["classes"] = per;
  j["macro avg"] = scores_json(macro_avg);
  j["weighted avg"] = scores_json(weighted_avg);
  j["confusion_matrix"] = confusion;
  return j;
}

}  // namespace trainrun
