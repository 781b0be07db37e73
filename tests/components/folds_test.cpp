// Cross-validation folds equal to scikit-learn's KFold(shuffle=True) and StratifiedKFold(
// shuffle=True) with the same random_state, on label lists of several shapes (python3-sklearn).
#include "components/data/folds.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <random>

namespace trainrun {
namespace {

// scikit-learn's test fold of every example, for each (labels, k, seed) case.
constexpr const char* kSklearnFolds = R"py(
import json, sys
import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold
out = []
for case in json.load(open(sys.argv[1])):
    y = np.array(case["labels"])
    splitter = (StratifiedKFold if case["stratified"] else KFold)(n_splits=case["k"], shuffle=True,
                                                                  random_state=case["seed"])
    fold = [-1] * len(y)
    for f, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
        for i in test:
            fold[int(i)] = f
    out.append(fold)
print(json.dumps(out))
)py";

TEST(Folds, KFoldAndStratifiedKFoldEqualScikitLearns) {
  test::TempDir dir;
  nlohmann::json cases = nlohmann::json::array();
  std::mt19937 rng(7);
  for (const auto& [n, classes, k, seed] : std::vector<std::tuple<int, int, int, uint32_t>>{
           {10, 2, 2, 0}, {103, 10, 5, 42}, {300, 3, 3, 42}, {257, 7, 4, 123456789}, {64, 4, 10, 4294967295u}}) {
    std::vector<int64_t> labels;
    for (int i = 0; i < n; ++i) labels.push_back(int64_t(rng() % uint32_t(classes)) * 3 + 1);  // gaps, first seen in any order
    for (bool stratified : {false, true}) cases.push_back({{"labels", labels}, {"k", k}, {"seed", seed}, {"stratified", stratified}});
  }
  test::write_file(dir / "cases.json", cases.dump());
  test::write_file(dir / "folds.py", kSklearnFolds);
  auto py = test::run(std::string(test::kPython) + " " + (dir / "folds.py") + " " + (dir / "cases.json"));
  ASSERT_EQ(py.code, 0) << py.err;
  const auto expected = nlohmann::json::parse(py.out);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto labels = cases[c]["labels"].get<std::vector<int64_t>>();
    const int64_t k = cases[c]["k"];
    const uint32_t seed = cases[c]["seed"];
    const auto folds = cases[c]["stratified"].get<bool>() ? stratified_kfold_assignment(labels, k, seed)
                                                          : kfold_assignment(labels.size(), k, seed);
    EXPECT_EQ(folds, expected[c].get<std::vector<int64_t>>()) << "case " << c << " " << cases[c]["stratified"];
  }
}

TEST(Folds, RefusesWhatScikitLearnRefuses) {
  EXPECT_THROW(kfold_assignment(3, 4, 0), std::invalid_argument);
  EXPECT_THROW(kfold_assignment(10, 1, 0), std::invalid_argument);
  // Every class smaller than k.
  EXPECT_THROW(stratified_kfold_assignment({0, 0, 1, 1, 2, 2}, 3, 0), std::invalid_argument);
  EXPECT_NO_THROW(stratified_kfold_assignment({0, 0, 0, 1, 1, 2}, 3, 0));
}

}  // namespace
}  // namespace trainrun
