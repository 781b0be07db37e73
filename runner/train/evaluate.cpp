#include "runner/train/evaluate.h"

#include "components/data/loader/loader.h"
#include "runner/logging/report.h"
#include "runner/train/autocast.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace trainrun {

namespace {

// This rank's rows (N x classes), concatenated with every other rank's in rank order.
at::Tensor gathered(const std::vector<at::Tensor>& parts, const Job& job, const Accelerator& acc) {
  const int64_t classes = int64_t(job.data.classes.size());
  at::Tensor mine = parts.empty() ? at::zeros({0, classes}, at::kFloat).to(acc.device()) : at::cat(parts);
  return acc.gather_for_metrics(mine).cpu();
}

// A flat C * C tensor of counts as rows.
std::vector<std::vector<int64_t>> square(const at::Tensor& flat, int64_t C) {
  const at::Tensor counts = flat.to(at::kLong).contiguous();
  const int64_t* v = counts.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < C; ++i) out.emplace_back(v + i * C, v + (i + 1) * C);
  return out;
}

// The model's outputs for a batch, in float, under the run's precision and memory format.
at::Tensor outputs(Classifier& model, at::Tensor x, const Job& job, const Accelerator& acc) {
  if (job.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  Autocast autocast(job.precision, acc.device());
  return model.forward(x).to(at::kFloat);
}

// For the classification report: each example's target and its top classes.
void keep_ranked(EvalResult& r, const at::Tensor& y, const at::Tensor& ranked) {
  at::Tensor yc = y.cpu().contiguous(), rc = ranked.cpu().contiguous();
  const int64_t k = rc.size(1);
  const int64_t* t = yc.data_ptr<int64_t>();
  const int64_t* top = rc.data_ptr<int64_t>();
  r.targets.insert(r.targets.end(), t, t + yc.size(0));
  for (int64_t i = 0; i < yc.size(0); ++i) r.ranked.emplace_back(top + i * k, top + (i + 1) * k);
}

}  // namespace

EvalResult evaluate(Classifier& model, DataLoader& loader, const Loss& loss, const Job& job, const Accelerator& acc,
                    bool keep_predictions) {
  auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  model.eval();
  // Sums, not means, so ranks with shards of different sizes combine exactly; kept on the device
  // (loss x n, correct, top-5, n) so a batch costs no wait for the device.
  at::Tensor sums = at::zeros({4}, at::TensorOptions().dtype(at::kDouble).device(acc.device()));
  EvalResult r;
  const bool multilabel = job.config.train.task == "multilabel";
  std::vector<at::Tensor> scores, truths;  // multilabel: this rank's sigmoids and multi-hot targets
  // Single-label: the confusion matrix, flat ([true * C + predicted] counts), summed with `sums`.
  const int64_t C = multilabel ? 0 : job.recipe.root["model"]["num_classes"].as<int64_t>();
  at::Tensor confusion = at::zeros({C * C}, sums.options());
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    // Non-blocking from the loader's pinned batches on CUDA (loader_options); a plain copy on a CPU.
    at::Tensor y = batch->targets.to(acc.device(), /*non_blocking=*/true);
    at::Tensor out = outputs(model, batch->inputs.to(acc.device(), /*non_blocking=*/true), job, acc);
    double n = double(y.size(0));
    if (multilabel) {  // the metrics need every score: kept, and counted after the pass
      sums.narrow(0, 0, 1).add_(loss(out, y, model.outputs_log_probs()).to(at::kDouble) * n);
      sums.narrow(0, 3, 1).add_(n);
      scores.push_back(torch::sigmoid(out));
      truths.push_back(y.to(at::kFloat));
      continue;
    }
    int64_t k = std::min<int64_t>(5, out.size(1));
    at::Tensor ranked = std::get<1>(out.topk(k, 1));
    const at::Tensor predicted = out.argmax(1);  // once, for the accuracy and the confusion matrix
    sums += at::stack({loss(out, y, model.outputs_log_probs()).to(at::kDouble) * n,
                       predicted.eq(y).sum().to(at::kDouble), ranked.eq(y.unsqueeze(1)).any(1).sum().to(at::kDouble),
                       at::scalar_tensor(n, sums.options())});
    confusion.index_add_(0, y * C + predicted, at::ones({y.size(0)}, sums.options()));
    if (keep_predictions) keep_ranked(r, y, ranked);
  }
  at::Tensor totals = acc.reduce_sum(at::cat({sums, confusion})).cpu();
  auto t = totals.accessor<double, 1>();
  r.examples = int64_t(t[3]);
  r.metrics["eval_loss"] = t[3] > 0 ? t[0] / t[3] : NAN;
  r.metrics["eval_accuracy"] = t[3] > 0 ? t[1] / t[3] : NAN;
  r.metrics["eval_top5"] = t[3] > 0 ? t[2] / t[3] : NAN;
  if (multilabel) {
    r.metrics.erase("eval_top5");
    at::Tensor all_scores = gathered(scores, job, acc), all_truths = gathered(truths, job, acc);
    r.multilabel = evaluate_multilabel(all_scores, all_truths, {job.config.train.threshold});
    if (keep_predictions) r.scores = all_scores, r.truths = all_truths;
    for (const auto& [name, value] : r.multilabel->metrics) r.metrics["eval_" + name] = value;
  } else {
    r.confusion = square(totals.narrow(0, 4, C * C), C);
    for (const auto& [name, value] : confusion_metrics(r.confusion)) r.metrics["eval_" + name] = value;
  }
  const double runtime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.metrics["eval_runtime"] = runtime;
  r.metrics["eval_samples_per_second"] = t[3] / runtime;
  return r;
}

std::string per_class_table(const EvalResult& r, const std::vector<std::string>& classes) {
  if (r.multilabel) return multilabel_report_text(*r.multilabel, classes);
  std::vector<std::string> names;  // the model's outputs, named where the dataset names them
  for (std::size_t c = 0; c < r.confusion.size(); ++c) names.push_back(c < classes.size() ? classes[c] : std::to_string(c));
  return report_of_confusion(r.confusion, names).text();
}

nlohmann::ordered_json eval_line(const EvalResult& r, const std::vector<std::string>& metrics, int64_t step,
                                 double epoch) {
  nlohmann::ordered_json line;
  std::vector<std::string> own = {"eval_loss"};
  for (const std::string& m : task_metric_names()) own.push_back("eval_" + m);
  own.insert(own.end(), {"eval_runtime", "eval_samples_per_second"});
  for (const std::string& key : own) {
    if (key == "eval_runtime")  // what callbacks added (eval_ema_*) follows the evaluation's own metrics
      for (const auto& [extra, v] : r.metrics)
        if (std::find(own.begin(), own.end(), extra) == own.end()) line[extra] = v;
    bool wanted = key == "eval_loss" || key == "eval_runtime" || key == "eval_samples_per_second";
    for (auto& m : metrics) wanted |= "eval_" + m == key;
    if (wanted && r.metrics.count(key)) line[key] = r.metrics.at(key);
  }
  line["eval_examples"] = r.examples;
  line["epoch"] = epoch;
  line["step"] = step;
  return line;
}

at::Tensor predict_scores(Classifier& model, DataLoader& loader, const Job& job, const Accelerator& acc) {
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<at::Tensor> all;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const at::Tensor out = outputs(model, batch->inputs.to(acc.device(), /*non_blocking=*/true), job, acc);
    all.push_back((job.config.train.task == "multilabel" ? torch::sigmoid(out)
                   : model.outputs_log_probs()            ? out.exp()
                                                          : torch::softmax(out, 1))
                      .cpu());
  }
  return all.empty() ? at::empty({0, 0}) : at::cat(all);
}

}  // namespace trainrun
