// The multi-label evaluation metrics against scikit-learn (python3-sklearn) on the same scores:
// average precision per class, macro and micro; F1 (macro, micro, samples), precision, recall and
// exact-match accuracy at per-class thresholds.
#include "runner/logging/multilabel_metrics.h"
#include "support/safetensors.h"

#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace trainrun {
namespace {

nlohmann::json sklearn(const at::Tensor& scores, const at::Tensor& targets, const std::vector<double>& thresholds) {
  test::TempDir dir;
  save_safetensors(dir / "in.safetensors", {{"scores", scores}, {"targets", targets},
                                            {"thresholds", torch::tensor(thresholds, torch::kDouble)}});
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/multilabel_metrics_ref.py") + " " +
                      (dir / "in.safetensors"));
  EXPECT_EQ(py.code, 0) << py.err;
  return py.code == 0 ? nlohmann::json::parse(py.out) : nlohmann::json::object();
}

// Scores with ties (rounded to tenths), a class no example has (its AP is 0 as sklearn's), an
// example with no label, and a threshold per class.
TEST(MultilabelMetrics, EqualScikitLearns) {
  torch::manual_seed(5);
  const int64_t n = 200, classes = 6;
  at::Tensor targets = torch::rand({n, classes}).lt(0.3).to(torch::kFloat);
  targets.select(1, 4).zero_();
  targets[7].zero_();
  // Scores that know something: higher where the target is 1.
  at::Tensor scores = torch::sigmoid(torch::randn({n, classes}) + 1.5 * (targets * 2 - 1));
  scores.slice(1, 0, 2).copy_(torch::round(scores.slice(1, 0, 2) * 10) / 10);
  const std::vector<double> thresholds = {0.5, 0.3, 0.7, 0.5, 0.5, 0.45};
  const nlohmann::json want = sklearn(scores, targets, thresholds);
  ASSERT_TRUE(want.contains("map"));
  const MultilabelEvaluation got = evaluate_multilabel(scores, targets, thresholds);
  double worst = 0;
  for (const std::string& m : multilabel_metric_names()) {
    EXPECT_NEAR(got.metrics.at(m), want[m].get<double>(), 1e-12) << m;
    worst = std::max(worst, std::abs(got.metrics.at(m) - want[m].get<double>()));
  }
  for (int64_t c = 0; c < classes; ++c) {
    EXPECT_NEAR(got.ap[std::size_t(c)], want["ap"][std::size_t(c)].get<double>(), 1e-12) << "class " << c;
    EXPECT_NEAR(got.f1[std::size_t(c)], want["f1"][std::size_t(c)].get<double>(), 1e-12) << "class " << c;
  }
  EXPECT_EQ(got.support[4], 0);
  EXPECT_EQ(got.ap[4], 0.0);
  // Enough signal that the metrics are neither 0 nor 1, so a wrong formula shows.
  EXPECT_GT(got.metrics.at("map"), 0.5);
  EXPECT_LT(got.metrics.at("f1_samples"), 0.99);
  std::cout << "[ measured ] multilabel metrics vs scikit-learn (200 x 6, ties, a class without positives): "
               "max abs difference "
            << worst << "\n";
}

// eval --tune-thresholds: per class the best F1 a Python user finds with precision_recall_curve,
// and a threshold that takes exactly the examples sklearn's `score >= t` takes (where no other
// threshold ties); the metrics at the tuned thresholds give those F1s back.
TEST(MultilabelMetrics, TunedThresholdsGiveScikitLearnsBestF1) {
  torch::manual_seed(11);
  const int64_t n = 300, classes = 5;
  at::Tensor targets = torch::rand({n, classes}).lt(0.25).to(torch::kFloat);
  targets.select(1, 3).zero_();
  at::Tensor scores = torch::sigmoid(torch::randn({n, classes}) + 1.2 * (targets * 2 - 1));
  scores.select(1, 1).copy_(torch::round(scores.select(1, 1) * 20) / 20);  // ties
  const nlohmann::json want = sklearn(scores, targets, std::vector<double>(classes, 0.5));
  ASSERT_TRUE(want.contains("tuned"));
  std::vector<double> thresholds;
  int compared = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const TunedThreshold t = best_f1_threshold(scores.select(1, c), targets.select(1, c), 0.5);
    thresholds.push_back(t.threshold);
    const nlohmann::json& w = want["tuned"][std::size_t(c)];
    if (w.is_null()) {
      EXPECT_FALSE(t.tuned) << "class " << c;
      EXPECT_EQ(t.threshold, 0.5);
      continue;
    }
    EXPECT_TRUE(t.tuned) << "class " << c;
    EXPECT_NEAR(t.f1, w["f1"].get<double>(), 1e-12) << "class " << c;
    if (!w["unique"].get<bool>()) continue;
    ++compared;
    const at::Tensor theirs = scores.select(1, c).to(at::kDouble).ge(w["threshold"].get<double>());
    EXPECT_TRUE(scores.select(1, c).to(at::kDouble).gt(t.threshold).equal(theirs)) << "class " << c;
  }
  EXPECT_GE(compared, 3);
  const MultilabelEvaluation at_tuned = evaluate_multilabel(scores, targets, thresholds);
  for (int64_t c = 0; c < classes; ++c) {
    if (want["tuned"][std::size_t(c)].is_null()) continue;
    EXPECT_NEAR(at_tuned.f1[std::size_t(c)], want["tuned"][std::size_t(c)]["f1"].get<double>(), 1e-12);
  }
  EXPECT_GT(at_tuned.metrics.at("f1_macro"), evaluate_multilabel(scores, targets, {0.5}).metrics.at("f1_macro"));
}

// One threshold for every class is the same as that threshold given per class.
TEST(MultilabelMetrics, OneThresholdForEveryClass) {
  torch::manual_seed(3);
  at::Tensor targets = torch::rand({40, 3}).lt(0.5).to(torch::kFloat), scores = torch::rand({40, 3});
  const auto one = evaluate_multilabel(scores, targets, {0.4});
  const auto each = evaluate_multilabel(scores, targets, {0.4, 0.4, 0.4});
  EXPECT_EQ(one.metrics, each.metrics);
  EXPECT_NE(evaluate_multilabel(scores, targets, {0.6}).metrics.at("f1_macro"), one.metrics.at("f1_macro"));
}

}  // namespace
}  // namespace trainrun
