// `trainrun eval RECIPE.yaml --checkpoint PATH`: the eval split through a saved model; prints the
// metrics and a classification report, and writes eval_report.json beside the weights.
#include "components/callbacks/checkpoint_format.h"
#include "runner/cli/commands.h"
#include "support/durable_file.h"
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

int cmd_eval(const std::vector<std::string>& args, const std::string& checkpoint) {
  JobOptions options;
  options.pretrained = false;  // the checkpoint's weights replace them
  Job job = load_job(args, options);
  std::string file = weights_file(checkpoint);
  load_state_dict(*job.model, load_safetensors(file), file);
  at::set_num_threads(int(job.threads));
  job.model->to(job.device);
  DataLoader loader(job.data.eval, job.eval_transforms, loader_options(job, /*train=*/false));
  Accelerator acc(WorldInfo{}, accelerator_options(job));
  EvalResult r = evaluate(*job.model, loader, *job.loss, job, acc, /*keep_predictions=*/true);
  std::vector<std::pair<std::string, double>> shown(r.metrics.begin(), r.metrics.end());
  shown.emplace_back("eval_examples", double(r.examples));
  spdlog::info("{}", python_dict(shown));

  nlohmann::ordered_json out;
  out["checkpoint"] = checkpoint;
  out["split"] = job.data.eval_split_name;
  for (auto& [key, value] : r.metrics) out[key] = value;
  if (r.multilabel) {
    std::cout << "\n" << multilabel_report_text(*r.multilabel, job.data.classes) << "\n"
              << "threshold " << job.config.train.threshold << " (train.threshold)\n";
    out["threshold"] = job.config.train.threshold;
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
