// `trainrun eval`'s classification report against sklearn.metrics on the same predictions.
#include "runner/logging/report.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <random>

namespace trainrun {
namespace {

using nlohmann::json;

// Random scores for `n` examples over `classes`, skewed so that some classes are never
// predicted (precision 0/0) and one never occurs (recall 0/0), the zero-division cases.
struct Predictions {
  std::vector<int64_t> targets;
  std::vector<std::vector<double>> scores;
  std::vector<std::vector<int64_t>> ranked;
};

Predictions random_predictions(std::size_t n, std::size_t classes, unsigned seed, bool absent_last = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Predictions p;
  for (std::size_t i = 0; i < n; ++i) {
    int64_t t = int64_t(rng() % (classes - 1));  // the last class never occurs
    std::vector<double> s(classes);
    for (auto& v : s) v = u(rng);
    if (u(rng) < 0.6) s[std::size_t(t)] += 1.0;  // right more often than chance
    s[1] -= 2.0;                                   // class 1 is never predicted
    if (absent_last) s[classes - 1] -= 2.0;        // nor, then, the last, which never occurs either
    std::vector<int64_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[std::size_t(a)] > s[std::size_t(b)]; });
    p.targets.push_back(t);
    p.scores.push_back(s);
    p.ranked.emplace_back(order.begin(), order.begin() + 5);
  }
  return p;
}

TEST(ClassificationReport, MatchesSklearn) {
  std::vector<std::string> classes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "a_rather_long_class_name"};
  Predictions p = random_predictions(500, classes.size(), 7);
  ClassificationReport r = classification_report(p.targets, p.ranked, classes);

  test::TempDir dir;
  test::write_file(dir / "preds.json", json{{"targets", p.targets}, {"scores", p.scores}, {"classes", classes}}.dump());
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/classification_report.py") + " " + (dir / "preds.json"));
  ASSERT_EQ(py.code, 0) << py.err;
  json ref = json::parse(py.out);

  EXPECT_EQ(r.text(4), ref["text"].get<std::string>());
  json mine = r.json();
  for (std::size_t c = 0; c < classes.size(); ++c)
    for (const char* k : {"precision", "recall", "f1-score", "support"})
      EXPECT_DOUBLE_EQ(mine["classes"][classes[c]][k].get<double>(), ref["dict"][classes[c]][k].get<double>()) << classes[c] << " " << k;
  for (const char* avg : {"macro avg", "weighted avg"})
    for (const char* k : {"precision", "recall", "f1-score", "support"})
      EXPECT_NEAR(mine[avg][k].get<double>(), ref["dict"][avg][k].get<double>(), 1e-12) << avg << " " << k;
  EXPECT_DOUBLE_EQ(r.accuracy, ref["dict"]["accuracy"].get<double>());
  EXPECT_DOUBLE_EQ(r.top5_accuracy, ref["top5"].get<double>());
  EXPECT_EQ(json(r.confusion), ref["confusion"]);
  // A training evaluation's per_class table comes from the confusion matrix alone: the same text.
  EXPECT_EQ(report_of_confusion(r.confusion, classes).text(4), ref["text"].get<std::string>());
  // The recipe metrics from the same confusion matrix.
  const auto metrics = confusion_metrics(r.confusion);
  EXPECT_NEAR(metrics.at("f1_macro"), ref["f1_macro"].get<double>(), 1e-12);
  EXPECT_NEAR(metrics.at("balanced_accuracy"), ref["balanced_accuracy"].get<double>(), 1e-12);
  // The zero-division rows really are exercised.
  EXPECT_EQ(r.per_class[1].precision, 0.0);
  EXPECT_EQ(r.per_class.back().support, 0);
}

// train.metrics' f1_macro and balanced_accuracy (computed from the evaluation's confusion matrix)
// are sklearn's f1_score(average="macro") and balanced_accuracy_score: a class in neither the
// targets nor the predictions is left out of f1_macro, where the report's macro avg counts it.
TEST(ClassificationReport, RecipeMetricsAreSklearns) {
  const std::vector<std::string> classes = {"a", "b", "c", "d", "e", "f"};
  Predictions p = random_predictions(400, classes.size(), 3, /*absent_last=*/true);
  const ClassificationReport r = classification_report(p.targets, p.ranked, classes);
  test::TempDir dir;
  test::write_file(dir / "preds.json", json{{"targets", p.targets}, {"scores", p.scores}, {"classes", classes}}.dump());
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/classification_report.py") + " " + (dir / "preds.json"));
  ASSERT_EQ(py.code, 0) << py.err;
  const json ref = json::parse(py.out);
  const auto metrics = confusion_metrics(r.confusion);
  EXPECT_NEAR(metrics.at("f1_macro"), ref["f1_macro"].get<double>(), 1e-12);
  EXPECT_NEAR(metrics.at("balanced_accuracy"), ref["balanced_accuracy"].get<double>(), 1e-12);
  EXPECT_EQ(r.per_class.back().support, 0);
  EXPECT_GT(metrics.at("f1_macro"), r.macro_avg.f1 + 0.01);
}

TEST(ClassificationReport, RejectsMismatchedInput) {
  EXPECT_THROW(classification_report({0, 1}, {{0}}, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(classification_report({0, 2}, {{0}, {1}}, {"a", "b"}), std::invalid_argument);
}

}  // namespace
}  // namespace trainrun
