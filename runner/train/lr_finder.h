// The learning-rate range test (Smith, "Cyclical Learning Rates for Training Neural Networks",
// 2017, section 3.3) as fastai's `Learner.lr_find` runs it (fastai/callback/schedule.py, and
// fastai/learner.py's AvgSmoothLoss, at fastai commit 5108887):
//   - step i of `steps` trains at lr = start * (end / start) ** (i / steps) (SchedExp; linear:
//     start + (i / steps) * (end - start), SchedLin), every parameter group scaled together;
//   - the loss is smoothed, avg = beta * avg + (1 - beta) * loss, reported as avg / (1 - beta ** n)
//     (beta 0.98);
//   - the test stops when the smoothed loss passes 4x the best so far (stop_div), or after `steps`;
//   - suggestions from the curve without its first steps / 10 and last 5 points (and, as later
//     fastai does, cut at a nan): `minimum` (the lr of the lowest loss, divided by 10) and `steep`
//     (the lr where the loss falls fastest against log lr).
// The trainer runs it as a callback (LrFinder): the recipe's model, data, optimizer, precision and
// world; each step's loss is the mean over its micro-batches and over ranks, so every rank sees
// the same curve and stops at the same step.
#pragma once

#include "components/callbacks/callback.h"
#include "support/progress.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

struct LrFindOptions {
  double start = 1e-7, end = 10;
  int64_t steps = 100;
  bool linear = false;       // --mode linear (else exp)
  double beta = 0.98;        // the smoothing
  double divergence = 4.0;   // stop when smoothed > divergence x best
};

// The lr of step `i` (0-based).
double lr_find_lr(const LrFindOptions& o, int64_t i);

// What the test recorded, one entry per step taken.
struct LrFindCurve {
  std::vector<double> lrs, losses, smoothed;
  std::string stopped;  // why it ended: "diverged at step N (...)", "loss nan at step N", "all N steps"
};

// fastai's AvgSmoothLoss and LRFinder.after_batch: adds a step; true when the test stops after it.
class LrFindRecorder {
 public:
  explicit LrFindRecorder(LrFindOptions o) : o_(o) {}
  bool add(double lr, double loss);
  const LrFindCurve& curve() const { return curve_; }
  LrFindCurve& curve() { return curve_; }

 private:
  LrFindOptions o_;
  LrFindCurve curve_;
  double avg_ = 0, best_ = INFINITY;
};

struct LrSuggestion {
  double lr = 0;     // the suggested lr
  double at_lr = 0;  // where on the curve it was read (minimum: the lowest loss's lr)
  double loss = 0;
};
struct LrSuggestions {
  std::optional<LrSuggestion> steep, minimum;  // nullopt: too few points to suggest
};

// fastai's `steep` and `minimum` over the curve's smoothed losses, as lr_find slices it.
LrSuggestions suggest_lrs(const LrFindCurve& curve, int64_t steps);

// The callback that runs the test in a training loop: sets every group's lr each step (each
// group's scheduler base lr in proportion, the largest group's being the curve's lr), records the
// step's loss reduced over ranks and asks the loop to stop. A nan/inf loss stops the world
// (the step agreement's WorldFailure); the caller then calls ended_by_nonfinite_loss().
class LrFinder : public Callback {
 public:
  explicit LrFinder(LrFindOptions o) : o_(o), recorder_(o) {}
  void on_train_begin(Trainer& t, TrainerControl&) override;
  void on_step_begin(Trainer& t, TrainerControl&) override;
  void on_before_backward(Trainer& t, const TrainBatch&, StepOutput& out) override;
  void on_step_end(Trainer& t, TrainerControl& control) override;
  void on_train_end(Trainer&, TrainerControl&) override;
  // The step in progress had a nan/inf loss on some rank: it ends the curve.
  void ended_by_nonfinite_loss();
  const LrFindCurve& curve() const { return recorder_.curve(); }

 private:
  LrFindOptions o_;
  LrFindRecorder recorder_;
  std::optional<Progress> bar_;  // the test's steps, on rank 0
  std::vector<double> ratios_;  // each group's lr / the curve's
  int64_t step_ = 0;
  double lr_ = 0;
  at::Tensor loss_sum_;  // this step's micro-batch losses, on the device
  int64_t micro_batches_ = 0;
};

}  // namespace trainrun
