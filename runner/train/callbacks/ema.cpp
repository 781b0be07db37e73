// train.ema: an exponential moving average of the weights, timm's ModelEmaV3
// (timm/utils/model_ema.py). After the optimizer step that makes global step s (every
// every_n_steps-th), with timm's get_decay(step=s):
//   k = s - 1;  decay = 0 when k <= 0 (the first update copies the weights), else `decay`, or
//   with warmup  max(min(1 - (1 + k / warmup_gamma) ** -warmup_power, decay), min_decay);
//   ema.lerp_(weights, 1 - decay) for every floating-point tensor of the state_dict (parameters
//   and BatchNorm statistics), integer buffers copied.
// Every rank holds the same weights after DDP's all-reduce, so every rank's EMA is the same.
// After each evaluation the EMA weights are evaluated too and their eval_ema_* join the same
// line (checkpoint-best, early stopping and reduce-on-plateau can judge by them). Each checkpoint
// holds model_ema.safetensors, which a resumed run reads back bit for bit; the run folder gets
// one at the end.
#include "runner/io/weights.h"
#include "runner/recipe/job.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/evaluate.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>

namespace trainrun {

namespace {

class ModelEma : public Callback {
 public:
  explicit ModelEma(const EmaOptions& o) : o_(o) {}

  void on_train_begin(Trainer& t, TrainerControl&) override {
    at::NoGradGuard no_grad;
    ema_.clear();
    for (const auto& [name, v] : state_dict(t.model())) ema_.emplace_back(name, v.detach().clone());
    if (!t.resumed_from()) return;
    const std::string file = (std::filesystem::path(*t.resumed_from()) / kEmaModelFile).string();
    if (!std::filesystem::exists(file)) {
      spdlog::warn("{} has no {}: the EMA starts from the resumed weights", *t.resumed_from(), kEmaModelFile);
      return;
    }
    TensorList saved = load_safetensors(file);
    if (saved.size() != ema_.size())
      throw WeightsError(file + ": " + std::to_string(saved.size()) + " tensors, the model has " + std::to_string(ema_.size()));
    for (std::size_t i = 0; i < ema_.size(); ++i) {
      if (saved[i].first != ema_[i].first || !saved[i].second.sizes().equals(ema_[i].second.sizes()))
        throw WeightsError(file + ": tensor " + std::to_string(i) + " is " + saved[i].first + ", the model's is " + ema_[i].first);
      ema_[i].second.copy_(saved[i].second);
    }
  }

  void on_step_end(Trainer& t, TrainerControl&) override {
    const int64_t step = t.state().global_step;
    if (step % o_.every_n_steps != 0) return;
    const double decay = decay_at(step);
    at::NoGradGuard no_grad;
    TensorList live = state_dict(t.model());
    for (std::size_t i = 0; i < ema_.size(); ++i) {
      at::Tensor& e = ema_[i].second;
      if (e.is_floating_point()) e.lerp_(live[i].second, 1.0 - decay);
      else e.copy_(live[i].second);
    }
  }

  // The EMA weights in the model for one evaluation, then the model's own back, bit for bit.
  void on_evaluation_metrics(Trainer& t, EvalResult& r) override {
    at::NoGradGuard no_grad;
    TensorList live = state_dict(t.model());
    std::vector<at::Tensor> own;
    for (std::size_t i = 0; i < live.size(); ++i) {
      own.push_back(live[i].second.detach().clone());
      live[i].second.detach().copy_(ema_[i].second);
    }
    EvalResult e = t.evaluate_model();
    for (std::size_t i = 0; i < live.size(); ++i) live[i].second.detach().copy_(own[i]);
    r.metrics["eval_ema_loss"] = e.metrics.at("eval_loss");
    for (const auto& m : t.job().config.train.metrics)
      if (m != kPerClassMetric) r.metrics["eval_ema_" + m] = e.metrics.at("eval_" + m);
  }

  void on_save_checkpoint(Trainer& t, CheckpointFiles& files) override {
    if (t.is_main_process()) files.add(kEmaModelFile, safetensors_bytes(ema_));
  }

  // A finished run (an early stop too) leaves the EMA beside model.safetensors.
  void on_train_end(Trainer& t, TrainerControl& control) override {
    if (control.stop_exit_code != 0 || !t.is_main_process()) return;
    const std::string file = (std::filesystem::path(t.output_dir()) / kEmaModelFile).string();
    save_safetensors(file, ema_);
    spdlog::info("Saved {}", file);
  }

 private:
  // timm's ModelEmaV3.get_decay(step) with update_after_step 0.
  double decay_at(int64_t step) const {
    const int64_t k = std::max<int64_t>(0, step - 1);
    if (k <= 0) return 0.0;
    if (!o_.warmup) return o_.decay;
    const double d = 1 - std::pow(1 + double(k) / o_.warmup_gamma, -o_.warmup_power);
    return std::max(std::min(d, o_.decay), o_.min_decay);
  }

  EmaOptions o_;
  TensorList ema_;
};

}  // namespace

std::shared_ptr<Callback> ema_callback(const EmaOptions& options) { return std::make_shared<ModelEma>(options); }

}  // namespace trainrun
