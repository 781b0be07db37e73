#include "runner/train/evaluate.h"

#include "components/data/loader/loader.h"
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
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    // Non-blocking from the loader's pinned batches on CUDA (loader_options); a plain copy on a CPU.
    at::Tensor x = batch->inputs.to(acc.device(), /*non_blocking=*/true);
    at::Tensor y = batch->targets.to(acc.device(), /*non_blocking=*/true);
    if (job.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor out;
    {
      Autocast autocast(job.precision, acc.device());
      out = model.forward(x);
    }
    out = out.to(at::kFloat);
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
    sums += at::stack({loss(out, y, model.outputs_log_probs()).to(at::kDouble) * n,
                       out.argmax(1).eq(y).sum().to(at::kDouble), ranked.eq(y.unsqueeze(1)).any(1).sum().to(at::kDouble),
                       at::scalar_tensor(n, sums.options())});
    if (keep_predictions) {
      at::Tensor yc = y.cpu().contiguous(), rc = ranked.cpu().contiguous();
      const int64_t* t = yc.data_ptr<int64_t>();
      const int64_t* top = rc.data_ptr<int64_t>();
      r.targets.insert(r.targets.end(), t, t + yc.size(0));
      for (int64_t i = 0; i < yc.size(0); ++i) r.ranked.emplace_back(top + i * k, top + (i + 1) * k);
    }
  }
  at::Tensor totals = acc.reduce_sum(sums);
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
  }
  const double runtime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.metrics["eval_runtime"] = runtime;
  r.metrics["eval_samples_per_second"] = t[3] / runtime;
  return r;
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

}  // namespace trainrun
