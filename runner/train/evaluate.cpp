#include "runner/train/evaluate.h"

#include "components/data/loader/loader.h"
#include "runner/train/autocast.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace trainrun {

EvalResult evaluate(Classifier& model, DataLoader& loader, const Loss& loss, const Job& job, const Accelerator& acc,
                    bool keep_predictions) {
  auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  model.eval();
  // Sums, not means, so ranks with shards of different sizes combine exactly; kept on the device
  // (loss x n, correct, top-5, n) so a batch costs no wait for the device.
  at::Tensor sums = at::zeros({4}, at::TensorOptions().dtype(at::kDouble).device(acc.device()));
  EvalResult r;
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
  double runtime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.examples = int64_t(t[3]);
  r.metrics["eval_loss"] = t[3] > 0 ? t[0] / t[3] : NAN;
  r.metrics["eval_accuracy"] = t[3] > 0 ? t[1] / t[3] : NAN;
  r.metrics["eval_top5"] = t[3] > 0 ? t[2] / t[3] : NAN;
  r.metrics["eval_runtime"] = runtime;
  r.metrics["eval_samples_per_second"] = t[3] / runtime;
  return r;
}

nlohmann::ordered_json eval_line(const EvalResult& r, const std::vector<std::string>& metrics, int64_t step,
                                 double epoch) {
  nlohmann::ordered_json line;
  const std::vector<std::string> own = {"eval_loss", "eval_accuracy", "eval_top5", "eval_runtime", "eval_samples_per_second"};
  for (const std::string& key : own) {
    if (key == "eval_runtime")  // what callbacks added (eval_ema_*) follows the evaluation's own metrics
      for (const auto& [extra, v] : r.metrics)
        if (std::find(own.begin(), own.end(), extra) == own.end()) line[extra] = v;
    bool wanted = key != "eval_accuracy" && key != "eval_top5";
    for (auto& m : metrics) wanted |= "eval_" + m == key;
    if (wanted) line[key] = r.metrics.at(key);
  }
  line["eval_examples"] = r.examples;
  line["epoch"] = epoch;
  line["step"] = step;
  return line;
}

}  // namespace trainrun
