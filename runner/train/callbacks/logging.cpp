// The run's logs as callbacks: the progress bar (rank 0), the console's Trainer-style dicts and
// metrics.jsonl + TensorBoard (rank 0), all from the lines the trainer logs.
#include "runner/logging/logging.h"
#include "support/progress.h"
#include "runner/logging/run_log.h"
#include "runner/train/callbacks/callbacks.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>

namespace trainrun {

namespace {

class ProgressBar : public Callback {
 public:
  void on_train_begin(Trainer& t, TrainerControl&) override {
    bar_.emplace(t.length().total_steps, t.state().global_step, t.is_main_process());
  }
  void on_step_end(Trainer& t, TrainerControl&) override { bar_->update(t.state().global_step); }
  void on_log(Trainer&, const nlohmann::ordered_json&) override { clear(); }
  void on_save_checkpoint(Trainer&, CheckpointFiles&) override { clear(); }  // before "Saving model checkpoint"
  void on_train_end(Trainer&, TrainerControl&) override {
    if (bar_) bar_->close();
  }

 private:
  void clear() {
    if (bar_) bar_->clear();
  }
  std::optional<Progress> bar_;
};

// As the Trainer prints its logs: loss to 4 digits, epoch to 2, the summary's runtime figures to
// 4 and 3; what trainrun adds to metrics.jsonl for tools (step, throughput, timings) stays there.
class Console : public Callback {
 public:
  void on_log(Trainer&, const nlohmann::ordered_json& line) override {
    std::vector<std::pair<std::string, double>> shown;
    for (auto it = line.begin(); it != line.end(); ++it) {
      const std::string& key = it.key();
      if (!it.value().is_number() || hidden(key)) continue;
      shown.emplace_back(key, rounded(key, it.value().get<double>()));
    }
    spdlog::info("{}", python_dict(shown));
  }

 private:
  static bool hidden(const std::string& key) {
    for (const char* k : {"step", "samples_per_second", "step_time_s", "data_wait_s", "elapsed_s", "eval_examples"})
      if (key == k) return true;
    return false;
  }
  static double rounded(const std::string& key, double v) {
    if (key == "loss" || key == "train_runtime") return std::round(v * 1e4) / 1e4;
    if (key == "epoch") return std::round(v * 100) / 100;
    if (key == "train_samples_per_second" || key == "train_steps_per_second") return std::round(v * 1e3) / 1e3;
    return v;
  }
};

class MetricsFile : public Callback {
 public:
  void on_train_begin(Trainer& t, TrainerControl&) override {
    if (t.is_main_process())
      log_.emplace(t.output_dir(), t.state().log_history, t.resumed_from() ? t.state().global_step : -1);
  }
  void on_log(Trainer&, const nlohmann::ordered_json& line) override {
    if (log_) log_->write(line);
  }

 private:
  std::optional<RunLog> log_;
};

}  // namespace

std::shared_ptr<Callback> progress_callback() { return std::make_shared<ProgressBar>(); }
std::shared_ptr<Callback> console_callback() { return std::make_shared<Console>(); }
std::shared_ptr<Callback> metrics_file_callback() { return std::make_shared<MetricsFile>(); }

}  // namespace trainrun
