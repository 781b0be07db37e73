// The evaluation metrics' names as recipes write them (run_config.h): the Trainer's
// metric_for_best_model spellings, which metrics each train.task reports, and why a metric a
// recipe names would never be evaluated.
#include "runner/recipe/run_config.h"

#include "runner/logging/multilabel_metrics.h"

#include <algorithm>

namespace trainrun {

// As the Trainer's metric_for_best_model: "accuracy" means "eval_accuracy"; losses are better
// lower, everything else higher (the readers of best_metric and early_stopping say so).
std::string evaluation_metric_name(const std::string& m) { return m.rfind("eval_", 0) == 0 ? m : "eval_" + m; }

std::vector<std::string> evaluation_metric_choices() {
  std::vector<std::string> out;
  for (const char* prefix : {"eval_", "", "eval_ema_", "ema_"}) {
    out.push_back(std::string(prefix) + "loss");
    for (const std::string& m : task_metric_names()) out.push_back(prefix + m);
  }
  return out;
}

const std::vector<std::string>& single_label_metric_names() {
  static const std::vector<std::string> names = {"accuracy", "top5", "f1_macro", "balanced_accuracy"};
  return names;
}

std::vector<std::string> task_metric_names() {
  std::vector<std::string> out = single_label_metric_names();
  for (const std::string& m : multilabel_metric_names())
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  return out;
}

std::string metric_task_mismatch(const std::string& task, const std::string& metric) {
  const auto& names = task == "multilabel" ? multilabel_metric_names() : single_label_metric_names();
  const auto all = task_metric_names();
  if (std::find(all.begin(), all.end(), metric) == all.end() || std::find(names.begin(), names.end(), metric) != names.end())
    return "";
  return metric + " is a " + (task == "multilabel" ? "single" : "multi") + "-label metric, but train.task is " + task;
}

// The EMA is evaluated for its loss and train.metrics (runner/train/callbacks/ema.cpp).
std::string unevaluated_metric(const TrainConfig& train, const std::string& metric) {
  for (const char* prefix : {"eval_ema_", "eval_"})
    if (metric.rfind(prefix, 0) == 0)
      if (std::string why = metric_task_mismatch(train.task, metric.substr(std::string(prefix).size())); !why.empty())
        return metric + ": " + why;
  const std::string ema = "eval_ema_";
  if (metric.rfind(ema, 0) != 0) return "";
  if (!train.ema) return metric + " is an EMA metric, but train.ema is null";
  const std::string m = metric.substr(ema.size());
  if (m != "loss" && std::find(train.metrics.begin(), train.metrics.end(), m) == train.metrics.end())
    return metric + " is not evaluated: train.metrics has no " + m;
  return "";
}

}  // namespace trainrun
