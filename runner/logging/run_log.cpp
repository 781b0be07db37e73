#include "runner/logging/run_log.h"

#include "support/durable_file.h"

#include <filesystem>
#include <stdexcept>

namespace trainrun {

namespace {

// HF's TensorBoardCallback.rewrite_logs: eval_* -> eval/*, everything else -> train/*; the
// learning rate is train/lr (docs/reference/run-folder.md), not train/learning_rate.
std::string tensorboard_tag(const std::string& key) {
  if (key.rfind("eval_", 0) == 0) return "eval/" + key.substr(5);
  if (key == "learning_rate") return "train/lr";
  return "train/" + key;
}

}  // namespace

RunLog::RunLog(const std::string& dir, const nlohmann::ordered_json& history, int64_t resumed_step)
    : path_((std::filesystem::path(dir) / "metrics.jsonl").string()), events_(dir, resumed_step) {
  // Rewritten whole (a resumed run's history), so a crash here never loses the old lines.
  std::string lines;
  if (history.is_array())
    for (auto& line : history) lines += line.dump() + "\n";
  write_file_atomic(path_, lines);
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error(path_ + ": cannot write");
}

void RunLog::write(const nlohmann::ordered_json& line) {
  out_ << line.dump() << "\n";
  out_.flush();
  int64_t step = line.value("step", int64_t(0));
  for (auto it = line.begin(); it != line.end(); ++it)
    if (it.key() != "step" && it.value().is_number()) events_.add_scalar(tensorboard_tag(it.key()), it.value().get<double>(), step);
  events_.flush();
}

}  // namespace trainrun
