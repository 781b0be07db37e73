// Learning-rate schedules against torch.optim.lr_scheduler run by python3-torch: a whole run's
// lr and momentum (beta1) for every parameter group at every step, to 1e-9 relative
// (schedule_reference.h); reduce_on_plateau fed a metric sequence as torch's ReduceLROnPlateau.
#include "schedule_reference.h"

namespace trainrun::schedule_reference {
namespace {

TEST(OneCycle, DefaultsWithSgdMomentumMatchTorch) {
  expect_same_schedule(sgd_momentum(), "{name: onecycle, max_lr: 0.1}", one_cycle({{"max_lr", 0.1}}));
}

TEST(OneCycle, ThreePhaseCyclesAdamBeta1LikeTorch) {
  expect_same_schedule(adam(), "{name: onecycle, max_lr: 0.01, three_phase: true}",
                       one_cycle({{"max_lr", 0.01}, {"three_phase", true}}));
}

TEST(OneCycle, LinearAnnealWithEveryKnobMatchesTorch) {
  expect_same_schedule(adamw(),
                       "{name: onecycle, max_lr: 0.02, anneal_strategy: linear, pct_start: 0.25, div_factor: 10,"
                       " final_div_factor: 100, base_momentum: 0.8, max_momentum: 0.9}",
                       one_cycle({{"max_lr", 0.02}, {"anneal_strategy", "linear"}, {"pct_start", 0.25},
                                  {"div_factor", 10.0}, {"final_div_factor", 100.0}, {"base_momentum", 0.8},
                                  {"max_momentum", 0.9}}));
}

TEST(OneCycle, LongerCycleThanTheRunAndNoMomentumCycling) {
  expect_same_schedule(adagrad(), "{name: onecycle, max_lr: 0.3, total_steps: 200, cycle_momentum: false}",
                       {{"scheduler", "OneCycleLR"},
                        {"args", {{"max_lr", 0.3}, {"total_steps", 200}, {"cycle_momentum", false}}}});
}

TEST(Cosine, WithoutWarmupIsCosineAnnealingLROverTheRun) {
  expect_same_schedule(sgd_momentum(), "{name: cosine}",
                       {{"scheduler", "CosineAnnealingLR"}, {"args", {{"T_max", kSteps}, {"eta_min", 0.0}}}});
}

TEST(Cosine, ShortTMaxRisesAgainAsTorchDoes) {
  expect_same_schedule(adam(), "{name: cosine, t_max: 50, eta_min: 0.001}",
                       {{"scheduler", "CosineAnnealingLR"}, {"args", {{"T_max", 50}, {"eta_min", 0.001}}}});
}

TEST(Cosine, WarmupIsSequentialLinearThenCosine) {
  expect_same_schedule(adamw(), "{name: cosine, warmup_steps: 12, eta_min: 1.0e-4}",
                       {{"scheduler", "WarmupCosine"},
                        {"args", {{"start_factor", 0.01}, {"warmup_steps", 12}, {"T_max", kSteps - 12}, {"eta_min", 1e-4}}}});
}

TEST(Cosine, WarmupStartFactor) {
  expect_same_schedule(sgd_momentum(), "{name: cosine, warmup_steps: 30, warmup_start_factor: 0.25}",
                       {{"scheduler", "WarmupCosine"},
                        {"args", {{"start_factor", 0.25}, {"warmup_steps", 30}, {"T_max", kSteps - 30}, {"eta_min", 0.0}}}});
}

TEST(StepSchedule, StepSizeIsInEpochs) {
  // StepLR stepped per epoch with step_size 3 == stepped per optimizer step with 3 * steps/epoch.
  expect_same_schedule(sgd_momentum(), "{name: step, step_size: 3}",
                       {{"scheduler", "StepLR"}, {"args", {{"step_size", 3 * kStepsPerEpoch}, {"gamma", 0.1}}}});
  expect_same_schedule(adam(), "{name: step, step_size: 1, gamma: 0.7}",
                       {{"scheduler", "StepLR"}, {"args", {{"step_size", kStepsPerEpoch}, {"gamma", 0.7}}}});
}

TEST(Constant, KeepsEachGroupsLr) {
  expect_same_schedule(sgd_momentum(), "{name: constant}",
                       {{"scheduler", "ConstantLR"}, {"args", {{"factor", 1.0}, {"total_iters", 0}}}});
}

// transformers' schedules: LambdaLR with its lambdas (tests/py/schedule.py re-derives them).
json transformers(const std::string& schedule, int64_t warmup, json extra = json::object()) {
  json args = {{"schedule", schedule}, {"num_warmup_steps", warmup}, {"num_training_steps", kSteps}};
  args.update(extra);
  return {{"scheduler", "transformers"}, {"args", args}};
}

// torchvision's warm-up: SequentialLR([LinearLR(start_factor, warmup), main], milestones=[warmup]).
json torch_warmup(double start_factor, int64_t warmup, const std::string& main, json main_args) {
  return {{"scheduler", "Warmup"},
          {"args", {{"start_factor", start_factor}, {"warmup_steps", warmup}, {"main", main}, {"main_args", main_args}}}};
}

TEST(Linear, WarmupThenDecayToZeroIsTransformers) {
  expect_same_schedule(sgd_momentum(), "{name: linear, warmup_steps: 10}", transformers("linear", 10));
  expect_same_schedule(adamw(), "{name: linear}", transformers("linear", 0));
}

TEST(Linear, WarmupRatioRoundsUpAsTransformers) {
  // ceil(0.1 * 137) = 14
  expect_same_schedule(adam(), "{name: linear, warmup_ratio: 0.1}", transformers("linear", 14));
}

TEST(Polynomial, PowerAndLrEndAgainstTheOptimizersLr) {
  // lr_end is absolute against optimizer.lr (0.1, group 0's); group 1 (0.05) is scaled by its lr.
  auto optim = two_groups<torch::optim::Adam>("adam", {{"lr", kLrs[0]}}, torch::optim::AdamOptions(kLrs[0]));
  expect_same_schedule(optim, "{name: polynomial, warmup_steps: 7, lr_end: 1.0e-3, power: 2.0}",
                       transformers("polynomial", 7, {{"lr_end", 1e-3}, {"power", 2.0}}), kLrs[0]);
  expect_same_schedule(optim, "{name: polynomial}", transformers("polynomial", 0, {{"lr_end", 1e-7}, {"power", 1.0}}),
                       kLrs[0]);
}

TEST(CosineWithRestarts, CyclesAfterWarmupAreTransformers) {
  // ceil(0.05 * 137) = 7
  expect_same_schedule(sgd_momentum(), "{name: cosine_with_restarts, num_cycles: 3, warmup_ratio: 0.05}",
                       transformers("cosine_with_restarts", 7, {{"num_cycles", 3}}));
  expect_same_schedule(adamw(), "{name: cosine_with_restarts}", transformers("cosine_with_restarts", 0, {{"num_cycles", 1}}));
}

TEST(Constant, WarmupIsTransformersConstantWithWarmup) {
  expect_same_schedule(adam(), "{name: constant, warmup_steps: 10}", transformers("constant", 10));
}

TEST(MultiStep, MilestonesAreEpochsAndRepeatsCountTwice) {
  expect_same_schedule(sgd_momentum(), "{name: multistep, milestones: [5, 2, 5], gamma: 0.5}",
                       {{"scheduler", "MultiStepLR"},
                        {"args", {{"milestones", {2 * kStepsPerEpoch, 5 * kStepsPerEpoch, 5 * kStepsPerEpoch}}, {"gamma", 0.5}}}});
}

TEST(MultiStep, WarmupIsSequentialLinearThenMultiStep) {
  expect_same_schedule(adamw(), "{name: multistep, milestones: [2, 6], warmup_steps: 15, warmup_start_factor: 0.2}",
                       torch_warmup(0.2, 15, "MultiStepLR",
                                    {{"milestones", {2 * kStepsPerEpoch, 6 * kStepsPerEpoch}}, {"gamma", 0.1}}));
}

TEST(StepSchedule, WarmupIsSequentialLinearThenStep) {
  expect_same_schedule(sgd_momentum(), "{name: step, step_size: 3, gamma: 0.5, warmup_ratio: 0.1}",
                       torch_warmup(0.01, 14, "StepLR", {{"step_size", 3 * kStepsPerEpoch}, {"gamma", 0.5}}));
}

TEST(Cosine, WarmupRatio) {
  expect_same_schedule(adam(), "{name: cosine, warmup_ratio: 0.1}",
                       {{"scheduler", "WarmupCosine"},
                        {"args", {{"start_factor", 0.01}, {"warmup_steps", 14}, {"T_max", kSteps - 14}, {"eta_min", 0.0}}}});
}

// A metric sequence with a trend, noise and plateaus (eval_loss-like; 1 - it for accuracy).
std::vector<double> metric_sequence() {
  std::vector<double> v;
  for (int i = 0; i < 60; ++i) v.push_back(1.0 / (1.0 + 0.05 * (i < 30 ? i : 30)) + 0.02 * std::sin(1.7 * i));
  return v;
}

// ReduceLROnPlateau in torch fed `metrics`, against reduce_on_plateau observing them as `key`
// (with optimizer steps in between, which must not move the lr): every group's lr after every
// evaluation, and torch's counters through a scheduler.json round trip halfway.
void expect_same_plateau(const std::string& section, json torch_args, const std::string& key,
                         const std::vector<double>& metrics) {
  json spec = {{"lrs", kLrs}, {"args", torch_args}, {"metrics", metrics}};
  auto py = test::python_reference("plateau.py", {spec.dump()});
  ASSERT_EQ(py.code, 0) << py.err;
  json expected = json::parse(py.out);

  auto opt = sgd_momentum().make();
  auto scheduler = make_scheduler(section, *opt);
  ASSERT_TRUE(scheduler->observes_evaluations());
  double worst = 0;
  int reductions = 0;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (i == metrics.size() / 2) {  // resume: a new optimizer and scheduler from scheduler.json
      std::string saved = scheduler->state().dump();
      auto again = sgd_momentum().make();
      auto resumed = make_scheduler(section, *again);
      resumed->load_state(json::parse(saved));
      for (std::size_t g = 0; g < kLrs.size(); ++g)
        ASSERT_EQ(again->param_groups()[g].options().get_lr(), opt->param_groups()[g].options().get_lr());
      EXPECT_EQ(resumed->state(), scheduler->state());
      opt = again;
      scheduler = resumed;
    }
    for (int s = 0; s < 3; ++s) scheduler->step();
    const double before = current_lr(*opt);
    scheduler->observe({{key, metrics[i]}, {"eval_runtime", 1.0}});
    reductions += current_lr(*opt) != before;
    for (std::size_t g = 0; g < kLrs.size(); ++g) {
      double lr = opt->param_groups()[g].options().get_lr(), want = expected["lr"][i][g].get<double>();
      worst = std::max(worst, relative_difference(lr, want));
      ASSERT_LE(relative_difference(lr, want), kTolerance) << "evaluation " << i << " group " << g << ": lr " << lr << ", torch " << want;
    }
    json state = scheduler->state();
    EXPECT_EQ(state["num_bad_epochs"], expected["num_bad_epochs"][i]) << "evaluation " << i;
    EXPECT_EQ(state["cooldown_counter"], expected["cooldown_counter"][i]) << "evaluation " << i;
    EXPECT_EQ(state["best"], expected["best"][i]) << "evaluation " << i;
  }
  EXPECT_GE(reductions, 2) << "the sequence should make torch reduce the lr more than once";
  std::cout << "[ measured ] reduce_on_plateau, " << metrics.size() << " evaluations, " << reductions
            << " reductions: max relative difference vs torch " << worst << "\n";
}

TEST(ReduceOnPlateau, PatienceOnTheLossIsTorchs) {
  expect_same_plateau("{name: reduce_on_plateau, patience: 2}", {{"patience", 2}}, "eval_loss", metric_sequence());
}

TEST(ReduceOnPlateau, CooldownAbsThresholdAndMinLr) {
  expect_same_plateau("{name: reduce_on_plateau, patience: 1, cooldown: 2, factor: 0.5, threshold: 0.01, threshold_mode: abs, min_lr: 0.01}",
                      {{"patience", 1}, {"cooldown", 2}, {"factor", 0.5}, {"threshold", 0.01}, {"threshold_mode", "abs"}, {"min_lr", 0.01}},
                      "eval_loss", metric_sequence());
}

TEST(ReduceOnPlateau, AccuracyIsMaximisedAndEpsSkipsSmallChanges) {
  std::vector<double> accuracy;
  for (double v : metric_sequence()) accuracy.push_back(1 - v);
  // eps 0.006: group 0 (0.1 -> 0.09) is reduced, group 1 (0.05 -> 0.045) is not.
  expect_same_plateau("{name: reduce_on_plateau, metric: accuracy, patience: 1, factor: 0.9, eps: 0.006}",
                      {{"mode", "max"}, {"patience", 1}, {"factor", 0.9}, {"eps", 0.006}}, "eval_accuracy", accuracy);
  expect_same_plateau("{name: reduce_on_plateau, metric: eval_top5, mode: max, threshold: 0.05, patience: 0}",
                      {{"mode", "max"}, {"threshold", 0.05}, {"patience", 0}}, "eval_top5", accuracy);
}

TEST(ReduceOnPlateau, OtherSchedulesIgnoreEvaluations) {
  auto opt = sgd_momentum().make();
  auto s = make_scheduler("{name: cosine}", *opt);
  EXPECT_FALSE(s->observes_evaluations());
  s->step();
  double lr = current_lr(*opt);
  s->observe({{"eval_loss", 1.0}});
  EXPECT_EQ(current_lr(*opt), lr);
}

}  // namespace
}  // namespace trainrun::schedule_reference
