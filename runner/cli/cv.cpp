// `trainrun cv RECIPE.yaml [overrides] --folds K [--stratified] [--fold I]`: k-fold
// cross-validation. Fold I is a whole trainrun run in OUTPUT_DIR/fold-I/ with data.cv_folds=K,
// data.cv_fold=I (components/data/folds.h: scikit-learn's KFold / StratifiedKFold with shuffle and
// the recipe's seed), started as a child (runner/cli/sub_runs.h), so a killed cv resumes the fold
// it was in. Once every fold has finished: each fold's last evaluation, their mean and standard
// deviation (numpy's std, ddof 0) in cv_report.json and a table, and oof_predictions.csv: every
// training example's scores from the model that did not train on it.
#include "runner/cli/commands.h"

#include "components/callbacks/checkpoint_format.h"
#include "components/data/folds.h"
#include "components/data/loader/loader.h"
#include "runner/cli/predict_files.h"
#include "runner/cli/sub_runs.h"
#include "runner/io/run_results.h"
#include "runner/io/weights.h"
#include "runner/train/trainer.h"
#include "support/durable_file.h"
#include "support/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct CvSetup {
  std::vector<std::string> args;  // the recipe and the user's overrides
  CvCommand c;
  fs::path dir;                   // OUTPUT_DIR
  CheckpointOptions output;
};

std::vector<std::string> fold_args(const CvSetup& s, int64_t fold, bool with_output = true) {
  std::vector<std::string> a = s.args;
  a.push_back("data.cv_folds=" + std::to_string(s.c.folds));
  a.push_back("data.cv_fold=" + std::to_string(fold));
  a.push_back(std::string("data.cv_stratified=") + (s.c.stratified ? "true" : "false"));
  if (with_output) a.push_back("output.dir=" + (s.dir / ("fold-" + std::to_string(fold))).string());
  return a;
}

CvSetup plan_cv(const std::vector<std::string>& args, const CvCommand& c) {
  if (args.empty()) throw RecipeError("cv: no recipe given (usage: trainrun cv RECIPE.yaml [overrides] --folds K)");
  for (std::size_t i = 1; i < args.size(); ++i)
    if (args[i].rfind("data.cv_", 0) == 0)
      throw RecipeError("cv: " + args[i] + ": cv sets data.cv_folds, cv_fold and cv_stratified itself (--folds, --fold, --stratified)");
  if (c.fold >= c.folds)
    throw RecipeError(fmt::format("cv: --fold {}: folds are 0 .. {} (--folds {})", c.fold, c.folds - 1, c.folds));
  CvSetup s{args, c, {}, {}};
  const RunConfig config = run_config_of(load_recipe_of(args));
  s.dir = config.output.dir;
  s.output = config.output;
  // output.dir is cv's folder; each fold gets its own.
  s.args.erase(std::remove_if(s.args.begin() + 1, s.args.end(), [](const std::string& a) { return a.rfind("output.dir=", 0) == 0; }),
               s.args.end());
  // The folds as the runs will cut them, so that a bad K (more folds than examples, or than
  // every class's) is exit 2 here rather than K failed runs.
  const Recipe first = load_recipe_of(fold_args(s, std::max<int64_t>(c.fold, 0)));
  const RunConfig fold_config = run_config_of(first);
  DatasetSplits splits = build_datasets(first, fold_config.data);
  apply_folds(splits, fold_config.data, fold_config.seed);
  return s;
}

// Each fold's run, one after another; the first that does not finish ends cv with its code.
int run_folds(const CvSetup& s) {
  SubRuns children;
  for (int64_t f = 0; f < s.c.folds; ++f) {
    if (s.c.fold >= 0 && f != s.c.fold) continue;
    spdlog::info("cv: fold {} of {} ({}): {}", f, s.c.folds, s.c.stratified ? "stratified" : "shuffled",
                 (s.dir / ("fold-" + std::to_string(f))).string());
    children.start(fold_args(s, f));
    const int code = children.wait_one().code;
    if (code != 0) {
      spdlog::error("cv: fold {} ended with exit code {}; `trainrun cv` again resumes it", f, code);
      return code;
    }
  }
  return kExitOk;
}

// The held-out examples of fold `f` through its final model: one CSV row each (index in the
// training split, image, label, fold, scores), keyed by index.
void add_oof_rows(const CvSetup& s, int64_t f, std::map<std::size_t, std::string>& rows, std::vector<std::string>& classes) {
  JobOptions options;
  options.pretrained = false;
  Job job = load_job(fold_args(s, f, /*with_output=*/false), options);
  const std::string weights = (s.dir / ("fold-" + std::to_string(f)) / kModelFile).string();
  load_state_dict(*job.model, load_safetensors(weights), weights);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  DataLoader loader(job.data.eval, job.eval_transforms, loader_options(job, /*train=*/false));
  Accelerator acc(WorldInfo{}, accelerator_options(job));
  const at::Tensor scores = predict_scores(*job.model, loader, job, acc).contiguous();
  const auto score = scores.accessor<float, 2>();
  const auto& held_out = dynamic_cast<const IndexSubset&>(*job.data.eval);
  classes = job.data.classes;
  for (std::size_t i = 0; i < held_out.size(); ++i) {
    const std::size_t index = held_out.base_index(i);
    const auto file = held_out.source_file(i);
    std::string row = fmt::format("{},{},{},{}", index, csv_cell(file ? *file : "#" + std::to_string(index)),
                                  csv_cell(classes.at(std::size_t(held_out.label(i)))), f);
    for (int64_t c = 0; c < scores.size(1); ++c) row += fmt::format(",{:.6g}", score[int64_t(i)][c]);
    rows[index] = row;
  }
}

ordered_json fold_figures(const RunResults& r, int64_t fold) {
  ordered_json j = {{"fold", fold}};
  for (const auto& [k, v] : r.last_eval)
    j[k] = k == "eval_examples" ? ordered_json(int64_t(v)) : ordered_json(v);
  return j;
}

void write_report(const CvSetup& s) {
  ordered_json folds = ordered_json::array();
  std::map<std::string, std::vector<double>> values;
  std::map<std::size_t, std::string> rows;
  std::vector<std::string> classes;
  for (int64_t f = 0; f < s.c.folds; ++f) {
    const RunResults r = read_run_results((s.dir / ("fold-" + std::to_string(f))).string(), "eval_loss", false);
    ordered_json j = fold_figures(r, f);
    for (const auto& [k, v] : j.items())
      if (k != "fold" && k != "eval_examples") values[k].push_back(v.get<double>());
    folds.push_back(j);
    add_oof_rows(s, f, rows, classes);
  }
  ordered_json mean, std_dev;
  std::string table = fmt::format("{:<8}", "fold");
  for (const auto& [k, v] : values) table += fmt::format(" {:>16}", k);
  for (const ordered_json& j : folds) {
    table += fmt::format("\n{:<8}", j["fold"].get<int64_t>());
    for (const auto& [k, v] : values) table += fmt::format(" {:>16.6g}", j.value(k, NAN));
  }
  for (const auto& [k, v] : values) {
    double m = 0, sq = 0;
    for (double x : v) m += x / double(v.size());
    for (double x : v) sq += (x - m) * (x - m) / double(v.size());
    mean[k] = m, std_dev[k] = std::sqrt(sq);
  }
  for (const auto& [name, row] : {std::pair{"mean", &mean}, std::pair{"std", &std_dev}}) {
    table += fmt::format("\n{:<8}", name);
    for (const auto& [k, v] : values) table += fmt::format(" {:>16.6g}", (*row)[k].get<double>());
  }
  const ordered_json report = {{"folds", s.c.folds},     {"stratified", s.c.stratified}, {"per_fold", folds},
                               {"mean", mean},           {"std", std_dev},               {"oof_predictions", "oof_predictions.csv"}};
  write_file_atomic(s.dir / "cv_report.json", report.dump(2) + "\n");
  std::string csv = "index,image,label,fold";
  for (const std::string& c : classes) csv += "," + csv_cell("score_" + c);
  csv += "\n";
  for (const auto& [index, row] : rows) csv += row + "\n";
  write_file_atomic(s.dir / "oof_predictions.csv", csv);
  spdlog::info("cv: {} folds ({}), each fold's last evaluation:\n{}", s.c.folds, s.c.stratified ? "stratified" : "shuffled", table);
  spdlog::info("Wrote {} and oof_predictions.csv ({} examples)", (s.dir / "cv_report.json").string(), rows.size());
}

bool every_fold_finished(const CvSetup& s) {
  for (int64_t f = 0; f < s.c.folds; ++f)
    if (!read_run_results((s.dir / ("fold-" + std::to_string(f))).string(), "eval_loss", false).finished) return false;
  return true;
}

}  // namespace

int cmd_cv(const std::vector<std::string>& args, const CvCommand& c) {
  const CvSetup s = plan_cv(args, c);
  if (const int code = run_folds(s); code != kExitOk) return code;
  if (!every_fold_finished(s)) {
    spdlog::info("cv: fold {} finished; the report waits for every fold (`trainrun cv` without --fold writes it)", c.fold);
    return kExitOk;
  }
  write_report(s);
  return kExitOk;
}

}  // namespace trainrun::cli
