// The LR range test's arithmetic against fastai's (tests/data/lr_find_reference.json, made by
// tests/py/lr_find_reference.py with fastai's own suggestion functions at the commit it names):
// the same loss sequences give the same lrs, smoothed losses, stopping step and suggestions.
// fastai keeps the smoothed loss and the suggestions' inputs in float32 tensors and trainrun in
// double, so values agree to float32's rounding (relative 1e-6), and the chosen points exactly.
#include "runner/train/lr_finder.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace trainrun {
namespace {

TEST(LrFinder, CurveStopAndSuggestionsEqualFastais) {
  const auto reference = nlohmann::json::parse(test::read_file(test::source("tests/data/lr_find_reference.json")));
  ASSERT_EQ(reference["cases"].size(), 3u);
  int diverged = 0;
  for (const auto& c : reference["cases"]) {
    LrFindOptions o;
    o.start = c["start"], o.end = c["end"], o.steps = c["steps"];
    LrFindRecorder recorder(o);
    const auto losses = c["losses"].get<std::vector<double>>();
    std::size_t taken = 0;
    for (double loss : losses) {
      ++taken;
      if (recorder.add(lr_find_lr(o, int64_t(taken - 1)), loss)) break;
    }
    const LrFindCurve& curve = recorder.curve();
    ASSERT_EQ(taken, c["stopped_after"].get<std::size_t>()) << curve.stopped;
    diverged += curve.stopped.rfind("diverged", 0) == 0;
    EXPECT_EQ(curve.stopped.rfind("diverged", 0) == 0, c["diverged"].get<bool>()) << curve.stopped;
    const auto lrs = c["lrs"].get<std::vector<double>>(), smoothed = c["smoothed"].get<std::vector<double>>();
    for (std::size_t i = 0; i < taken; ++i) {
      EXPECT_DOUBLE_EQ(curve.lrs[i], lrs[i]) << i;
      EXPECT_NEAR(curve.smoothed[i], smoothed[i], 1e-6 * std::abs(smoothed[i])) << i;
    }
    const LrSuggestions s = suggest_lrs(curve, o.steps);
    ASSERT_TRUE(s.minimum && s.steep);
    EXPECT_NEAR(s.minimum->lr, c["minimum"].get<double>(), 1e-6 * c["minimum"].get<double>());
    EXPECT_NEAR(s.minimum->at_lr, c["minimum_at"].get<double>(), 1e-6 * c["minimum_at"].get<double>());
    EXPECT_NEAR(s.steep->lr, c["steep"].get<double>(), 1e-6 * c["steep"].get<double>());
  }
  EXPECT_EQ(diverged, 2);  // the cases cover both ends
}

TEST(LrFinder, LinearModeAndANanEndTheCurve) {
  LrFindOptions o;
  o.start = 0.01, o.end = 1.0, o.steps = 10, o.linear = true;
  EXPECT_DOUBLE_EQ(lr_find_lr(o, 0), 0.01);
  EXPECT_DOUBLE_EQ(lr_find_lr(o, 5), 0.01 + 0.5 * 0.99);
  LrFindRecorder r(o);
  EXPECT_FALSE(r.add(0.01, 1.0));
  EXPECT_TRUE(r.add(0.109, NAN));
  EXPECT_EQ(r.curve().stopped, "loss nan at step 2");
  // Too short a curve for fastai's slice: no suggestion rather than a made-up one.
  EXPECT_FALSE(suggest_lrs(r.curve(), o.steps).minimum);
}

}  // namespace
}  // namespace trainrun
