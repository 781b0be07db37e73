// A callback added from outside trainrun's tree: the training and evaluation lines of a run as
// CSV rows (rank 0), in output.dir. Built as a plugin, a shared library linked to libtrainrun
// (CMakeLists.txt here: against an installed trainrun, or in trainrun's tree), and used from a recipe:
//
//   plugins: [path/to/libcsv_logger.so]
//   callbacks:
//     - {name: csv_logger, file: metrics.csv, columns: [step, epoch, loss, eval_accuracy]}
//
// Registering is all it takes: the recipe engine checks the parameters against the schema,
// `trainrun describe callbacks/csv_logger` shows them (with TRAINRUN_PLUGINS set), and the
// trainer fires the events (components/callbacks/callback.h).
#include "components/callbacks/callback.h"
#include "support/errors.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace {

using namespace trainrun;

class CsvLogger : public Callback {
 public:
  explicit CsvLogger(const Config& c)
      : file_(c.get<std::string>("file")), columns_(c.get<std::vector<std::string>>("columns")) {}

  void on_train_begin(Trainer& trainer, TrainerControl&) override {
    if (!trainer.is_main_process()) return;
    std::filesystem::path path = file_;
    if (path.is_relative()) path = std::filesystem::path(trainer.output_dir()) / path;
    out_.open(path, std::ios::trunc);
    if (!out_) throw TrainingError(path.string() + ": cannot write");
    for (std::size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << columns_[i];
    out_ << "\n";
  }

  void on_log(Trainer&, const nlohmann::ordered_json& line) override {
    if (!out_.is_open() || !(line.contains("loss") || line.contains("eval_loss"))) return;  // not the summary
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      out_ << (i ? "," : "");
      if (!line.contains(columns_[i])) continue;
      const auto& v = line[columns_[i]];
      if (v.is_number_integer()) out_ << v.get<int64_t>();
      else if (v.is_number()) out_ << fmt::format("{}", v.get<double>());
    }
    out_ << "\n";
    out_.flush();
  }

 private:
  std::string file_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

}  // namespace

TRAINRUN_REGISTER(Callback, "csv_logger", "training and evaluation lines as CSV rows (examples/custom_callback)",
                  Schema()
                      .add("file", Type::Path, yaml("metrics.csv"), "the CSV file; relative to output.dir")
                      .add("columns", Type::StringList, yaml("[step, epoch, loss, learning_rate, eval_loss, eval_accuracy]"),
                           "metrics.jsonl keys, one column each (empty where a line lacks it)"),
                  [](const Config& c) { return std::make_shared<CsvLogger>(c); });
