// `trainrun eval RECIPE.yaml --checkpoint PATH`: the eval split through a saved model; prints the
// metrics and a classification report, and writes eval_report.json beside the weights. A
// multilabel model is judged at its thresholds (thresholds.json beside the weights, else
// train.threshold); --tune-thresholds first picks them on this split and writes thresholds.json.
#include "components/callbacks/checkpoint_format.h"
#include "runner/cli/commands.h"
#include "support/durable_file.h"
#include "runner/io/thresholds.h"
#include "runner/io/weights.h"
#include "runner/logging/logging.h"
#include "runner/logging/report.h"
#include "runner/train/trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <filesystem>
#include <iostream>

namespace trainrun::cli {

namespace fs = std::filesystem;

std::string weights_file(const std::string& checkpoint) {
  if (fs::is_directory(checkpoint)) return (fs::path(checkpoint) / kModelFile).string();
  return checkpoint;
}

namespace {

// The multilabel report's thresholds: tuned on this evaluation's scores and written to
// thresholds.json (`tune`), else those of thresholds.json beside the weights, else
// train.threshold; `r` is evaluated again at per-class ones. Returns where they came from.
std::string judge_at_thresholds(EvalResult& r, const Job& job, const std::string& weights, bool tune) {
  const double fallback = job.config.train.threshold;
  std::optional<std::vector<double>> per_class;
  std::string note, source = "train.threshold";
  if (tune) {
    std::vector<ClassThreshold> tuned;
    for (std::size_t c = 0; c < job.data.classes.size(); ++c) {
      const TunedThreshold t = best_f1_threshold(r.scores.select(1, int64_t(c)), r.truths.select(1, int64_t(c)), fallback);
      tuned.push_back({job.data.classes[c], t.threshold, t.tuned ? std::optional<double>(t.f1) : std::nullopt});
      if (!t.tuned) spdlog::warn("{}: no positive example in the eval split; its threshold stays {} (train.threshold)",
                                    job.data.classes[c], fallback);
    }
    std::string file;
    try {
      file = write_thresholds(weights, job.data.eval_split_name, tuned);
    } catch (const FileWriteError& e) {
      throw TrainingError(std::string(e.what()) + " (the thresholds)");
    }
    spdlog::info("Wrote {} (per class, the threshold with the best F1 on the {} split)", file, job.data.eval_split_name);
    per_class = std::vector<double>();
    for (const ClassThreshold& t : tuned) per_class->push_back(t.threshold);
    source = std::string(kThresholdsFile) + ", tuned on this split: the figures at them are optimistic";
  } else if ((per_class = tuned_thresholds(weights, job.data.classes, &note))) {
    source = (fs::path(weights).parent_path() / kThresholdsFile).string();
  }
  if (!note.empty()) spdlog::warn("{}; judging at train.threshold", note);
  if (per_class) {
    r.multilabel = evaluate_multilabel(r.scores, r.truths, *per_class);
    for (const auto& [name, value] : r.multilabel->metrics) r.metrics["eval_" + name] = value;
  }
  return source;
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args, const std::string& checkpoint, bool tune_thresholds) {
  JobOptions options;
  options.pretrained = false;  // the checkpoint's weights replace them
  Job job = load_job(args, options);
  if (tune_thresholds && job.config.train.task != "multilabel")
    throw RecipeError("eval --tune-thresholds: train.task is " + job.config.train.task +
                      "; thresholds are a multilabel model's (train.task: multilabel)");
  std::string file = weights_file(checkpoint);
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  DataLoader loader(job.data.eval, job.eval_transforms, loader_options(job, /*train=*/false));
  Accelerator acc(WorldInfo{}, accelerator_options(job));
  EvalResult r = evaluate(*job.model, loader, *job.loss, job, acc, /*keep_predictions=*/true);
  const std::string thresholds = r.multilabel ? judge_at_thresholds(r, job, file, tune_thresholds) : "";
  std::vector<std::pair<std::string, double>> shown(r.metrics.begin(), r.metrics.end());
  shown.emplace_back("eval_examples", double(r.examples));
  spdlog::info("{}", python_dict(shown));

  nlohmann::ordered_json out;
  out["checkpoint"] = checkpoint;
  out["split"] = job.data.eval_split_name;
  for (auto& [key, value] : r.metrics) out[key] = value;
  if (r.multilabel) {
    std::cout << "\n" << multilabel_report_text(*r.multilabel, job.data.classes) << "\n"
              << "thresholds: " << thresholds << "\n";
    out["thresholds_from"] = thresholds;
    out.update(multilabel_report_json(*r.multilabel, job.data.classes));
  } else {
    ClassificationReport report = classification_report(r.targets, r.ranked, job.data.classes);
    std::cout << "\n" << report.text() << "\n" << "top-1 accuracy " << fmt::format("{:.4f}", report.accuracy)
              << ", top-5 accuracy " << fmt::format("{:.4f}", report.top5_accuracy) << "\n";
    out.update(report.json());
  }
  // Next to the weights it describes; written whole or not at all.
  fs::path report_path = fs::path(file).parent_path() / "eval_report.json";
  try {
    write_file_atomic(report_path, out.dump(2) + "\n");
  } catch (const FileWriteError& e) {
    throw TrainingError(std::string(e.what()) + " (the report)");
  }
  spdlog::info("Wrote {}", report_path.string());
  return kExitOk;
}

}  // namespace trainrun::cli
