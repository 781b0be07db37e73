#include "runner/train/lr_finder.h"

#include "components/optim/optim.h"
#include "runner/distributed/accelerator.h"
#include "runner/train/checkpoints.h"

#include <torch/optim.h>

#include <algorithm>
#include <cmath>

namespace trainrun {

double lr_find_lr(const LrFindOptions& o, int64_t i) {
  const double pos = double(i) / double(o.steps);
  return o.linear ? o.start + pos * (o.end - o.start) : o.start * std::pow(o.end / o.start, pos);
}

bool LrFindRecorder::add(double lr, double loss) {
  const int64_t n = int64_t(curve_.lrs.size()) + 1;
  curve_.lrs.push_back(lr);
  curve_.losses.push_back(loss);
  if (!std::isfinite(loss)) {
    curve_.smoothed.push_back(NAN);
    curve_.stopped = "loss " + std::string(std::isnan(loss) ? "nan" : "inf") + " at step " + std::to_string(n);
    return true;
  }
  avg_ = o_.beta * avg_ + (1 - o_.beta) * loss;
  const double smooth = avg_ / (1 - std::pow(o_.beta, double(n)));
  curve_.smoothed.push_back(smooth);
  best_ = std::min(best_, smooth);
  if (smooth > o_.divergence * best_) {
    curve_.stopped = "diverged at step " + std::to_string(n) + " (the smoothed loss passed " +
                     std::to_string(int(o_.divergence)) + "x its best)";
    return true;
  }
  if (n >= o_.steps) {
    curve_.stopped = "all " + std::to_string(n) + " steps";
    return true;
  }
  return false;
}

LrSuggestions suggest_lrs(const LrFindCurve& curve, int64_t steps) {
  // lr_find's slice: [num_it // 10 : -5], then up to the first nan.
  const std::ptrdiff_t first = std::ptrdiff_t(steps / 10), last = std::ptrdiff_t(curve.smoothed.size()) - 5;
  std::vector<double> lrs, losses;
  for (std::ptrdiff_t i = first; i < last; ++i) {
    if (std::isnan(curve.smoothed[std::size_t(i)])) break;
    lrs.push_back(curve.lrs[std::size_t(i)]);
    losses.push_back(curve.smoothed[std::size_t(i)]);
  }
  LrSuggestions out;
  if (losses.empty()) return out;
  // torch.argmin: the first of equal values.
  const std::size_t lowest = std::size_t(std::min_element(losses.begin(), losses.end()) - losses.begin());
  out.minimum = LrSuggestion{lrs[lowest] / 10, lrs[lowest], losses[lowest]};
  if (losses.size() < 2) return out;
  std::size_t steepest = 0;
  double best = INFINITY;
  for (std::size_t i = 0; i + 1 < losses.size(); ++i) {
    const double grad = (losses[i + 1] - losses[i]) / (std::log(lrs[i + 1]) - std::log(lrs[i]));
    if (grad < best) best = grad, steepest = i;
  }
  out.steep = LrSuggestion{lrs[steepest], lrs[steepest], losses[steepest]};
  return out;
}

void LrFinder::on_train_begin(Trainer& t, TrainerControl&) { bar_.emplace(o_.steps, 0, t.is_main_process()); }

void LrFinder::on_train_end(Trainer&, TrainerControl&) {
  if (bar_) bar_->close();
}

void LrFinder::on_step_begin(Trainer& t, TrainerControl&) {
  lr_ = lr_find_lr(o_, step_);
  // The groups keep their ratios (layer decay, a freeze rule's lr_scale): each is set to lr_ x its
  // base lr / the largest base lr, so the largest group's lr is the curve's, as fastai records
  // the last group's (the head's) lr. Read again only when a group joins (gradual unfreezing).
  auto& groups = t.optimizer().param_groups();
  if (ratios_.size() != groups.size()) {
    const auto base = t.parts().scheduler.state()["base_lrs"].get<std::vector<double>>();
    const double largest = base.empty() ? 1.0 : *std::max_element(base.begin(), base.end());
    ratios_.assign(groups.size(), 1.0);
    for (std::size_t g = 0; g < groups.size() && g < base.size(); ++g)
      if (largest > 0) ratios_[g] = base[g] / largest;
  }
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lr_ * ratios_[g]);
  loss_sum_ = at::Tensor(), micro_batches_ = 0;
}

void LrFinder::on_before_backward(Trainer&, const TrainBatch&, StepOutput& out) {
  // Summed on the device: one host read a step (on_step_end), not one a micro-batch.
  const at::Tensor loss = out.loss.detach().to(at::kDouble);
  loss_sum_ = loss_sum_.defined() ? loss_sum_ + loss : loss;
  ++micro_batches_;
}

void LrFinder::on_step_end(Trainer& t, TrainerControl& control) {
  const double local = loss_sum_.defined() ? loss_sum_.item<double>() : 0.0;
  const double loss = t.accelerator().mean(local / double(std::max<int64_t>(micro_batches_, 1)));
  ++step_;
  if (bar_) bar_->update(step_);
  if (recorder_.add(lr_, loss)) control.should_training_stop = true;
}

void LrFinder::ended_by_nonfinite_loss() {
  if (int64_t(recorder_.curve().lrs.size()) == step_) recorder_.add(lr_, NAN);
}

}  // namespace trainrun
