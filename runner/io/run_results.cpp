#include "runner/io/run_results.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace trainrun {

RunResults read_run_results(const std::string& run_dir, const std::string& metric, bool greater_is_better) {
  RunResults r;
  std::ifstream in(std::filesystem::path(run_dir) / "metrics.jsonl");
  std::string text;
  while (std::getline(in, text)) {
    const nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object()) continue;  // a line cut short by a kill
    r.step = line.value("step", r.step);
    if (line.contains("train_runtime")) {
      r.finished = true;
      if (line.contains("train_loss") && line["train_loss"].is_number()) r.train_loss = line["train_loss"].get<double>();
    }
    if (!line.contains("eval_loss")) continue;
    r.last_eval.clear();
    for (const auto& [key, value] : line.items())
      if (key.rfind("eval_", 0) == 0 && value.is_number() && key.find("runtime") == std::string::npos &&
          key.find("per_second") == std::string::npos)
        r.last_eval[key] = value.get<double>();
    if (!line.contains(metric) || !line[metric].is_number()) continue;
    const double v = line[metric].get<double>();
    if (!r.best || (greater_is_better ? v > *r.best : v < *r.best)) r.best = v, r.best_step = r.step;
  }
  return r;
}

}  // namespace trainrun
