// `trainrun cv` through the binary: the folds are scikit-learn's StratifiedKFold(shuffle=True,
// random_state=seed) of the training labels (python3-sklearn on the idx file's labels); each
// fold's run evaluates on its part; the report's per-fold figures are the runs' and its mean and
// std theirs; the out-of-fold scores are each fold's final model on its part (their top-1 hits
// are the fold's eval_accuracy); a cv stopped in its second fold resumes it and ends as
// `cv --fold 1` alone does; bad folds are exit 2.
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <numeric>
#include <sstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Cv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
  std::string base = test::source("recipes/quickstart.yaml") +
                     " data.max_train_samples=300 data.workers=0 world.nproc_per_node=1 world.threads_per_proc=1 ";
};

constexpr const char* kStratifiedFolds = R"py(
import gzip, json, sys
import numpy as np
from sklearn.model_selection import StratifiedKFold
with gzip.open(sys.argv[1]) as f:
    y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)[:int(sys.argv[2])]
fold = [0] * len(y)
for k, (_, test) in enumerate(StratifiedKFold(n_splits=int(sys.argv[3]), shuffle=True, random_state=42).split(np.zeros(len(y)), y)):
    for i in test:
        fold[int(i)] = k
print(json.dumps({"fold": fold, "labels": y.tolist()}))
)py";

struct OofRow {
  std::size_t index;
  std::string label;
  int64_t fold;
  std::vector<double> scores;
};

std::vector<OofRow> read_oof(const std::string& path, std::vector<std::string>& header) {
  std::ifstream in(path);
  std::string line, cell;
  std::getline(in, line);
  std::stringstream h(line);
  while (std::getline(h, cell, ',')) header.push_back(cell);
  std::vector<OofRow> rows;
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::vector<std::string> cells;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    OofRow r{std::stoul(cells[0]), cells[2], std::stoll(cells[3]), {}};
    for (std::size_t i = 4; i < cells.size(); ++i) r.scores.push_back(std::stod(cells[i]));
    rows.push_back(r);
  }
  return rows;
}

TEST_F(Cv, StratifiedFoldsEqualScikitLearnsAndTheReportIsTheFolds) {
  auto r = test::run(test::trainrun("cv " + base + "output.dir=" + (dir / "cv") + " --folds 3 --stratified"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  test::write_file(dir / "folds.py", kStratifiedFolds);
  auto py = test::run(std::string(test::kPython) + " " + (dir / "folds.py") + " " + test::kFashionMnist +
                      "/train-labels-idx1-ubyte.gz 300 3");
  ASSERT_EQ(py.code, 0) << py.err;
  const json expected = json::parse(py.out);
  const json classes = json::parse(test::read_file(dir / "cv/fold-0/labels.json"));

  std::vector<std::string> header;
  const auto rows = read_oof(dir / "cv/oof_predictions.csv", header);
  ASSERT_EQ(rows.size(), 300u);
  EXPECT_EQ(header.size(), 14u);  // index, image, label, fold, a score per class
  std::vector<int64_t> hits(3, 0), sizes(3, 0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].index, i);
    EXPECT_EQ(rows[i].fold, expected["fold"][i].get<int64_t>()) << i;
    EXPECT_EQ(rows[i].label, classes[std::to_string(expected["labels"][i].get<int>())].get<std::string>());
    const auto top = std::max_element(rows[i].scores.begin(), rows[i].scores.end()) - rows[i].scores.begin();
    EXPECT_NEAR(std::accumulate(rows[i].scores.begin(), rows[i].scores.end(), 0.0), 1.0, 1e-4);
    ++sizes[std::size_t(rows[i].fold)];
    hits[std::size_t(rows[i].fold)] += classes[std::to_string(top)] == rows[i].label;
  }
  const json report = json::parse(test::read_file(dir / "cv/cv_report.json"));
  double mean = 0, sq = 0;
  std::vector<double> accuracy;
  for (int f = 0; f < 3; ++f) {
    json last;
    for (const auto& l : test::read_jsonl(dir / ("cv/fold-" + std::to_string(f) + "/metrics.jsonl")))
      if (l.contains("eval_loss")) last = l;
    EXPECT_EQ(last["eval_examples"], sizes[std::size_t(f)]);
    EXPECT_EQ(report["per_fold"][f]["eval_accuracy"], last["eval_accuracy"]);
    EXPECT_EQ(report["per_fold"][f]["eval_loss"], last["eval_loss"]);
    // The out-of-fold scores are the fold's final model on its part.
    EXPECT_NEAR(last["eval_accuracy"].get<double>(), double(hits[std::size_t(f)]) / double(sizes[std::size_t(f)]), 1e-12);
    accuracy.push_back(last["eval_accuracy"]);
    mean += accuracy.back() / 3;
  }
  for (double a : accuracy) sq += (a - mean) * (a - mean) / 3;
  EXPECT_NEAR(report["mean"]["eval_accuracy"].get<double>(), mean, 1e-12);
  EXPECT_NEAR(report["std"]["eval_accuracy"].get<double>(), std::sqrt(sq), 1e-12);
  EXPECT_NE(r.out.find("mean "), std::string::npos) << r.out;
}

TEST_F(Cv, AStoppedCvResumesTheFoldItWasIn) {
  const std::string out = dir / "cv", cv = test::trainrun("cv " + base + "output.save_every=2 output.dir=" + out + " --folds 2");
  auto r = test::run("bash -c 'TRAINRUN_STEP_DELAY_MS=150 " + cv + " >" + (dir / "out1") + " 2>&1 & L=$!; " +
                     "for i in $(seq 1200); do [ -e " + out + "/fold-1/checkpoint-2/trainer_state.json ] && break; sleep 0.05; done; " +
                     "kill -TERM $L; wait $L; echo rc=$?'");
  ASSERT_NE(r.out.find("rc=130"), std::string::npos) << r.out << test::read_file(dir / "out1");
  ASSERT_FALSE(fs::exists(out + "/cv_report.json"));
  auto again = test::run(cv);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(test::read_file(out + "/fold-1/train.log").find("Resuming from"), std::string::npos);
  EXPECT_TRUE(fs::exists(out + "/cv_report.json"));
  // One fold alone (a job array's task): the same model; the report waits for the other fold.
  auto one = test::run(test::trainrun("cv " + base + "output.save_every=2 output.dir=" + (dir / "one") + " --folds 2 --fold 1"));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_TRUE(test::read_file(out + "/fold-1/model.safetensors") == test::read_file(dir / "one/fold-1/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "one/fold-0"));
  EXPECT_FALSE(fs::exists(dir / "one/cv_report.json"));
  EXPECT_NE(one.out.find("the report waits for every fold"), std::string::npos) << one.out;
}

TEST_F(Cv, BadFoldsAreExit2) {
  auto r = test::run(test::trainrun("cv " + base + "output.dir=" + (dir / "bad") + " --folds 3 --fold 3"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cv: --fold 3: folds are 0 .. 2"), std::string::npos) << r.err;
  r = test::run(test::trainrun("cv " + base + "data.cv_fold=1 output.dir=" + (dir / "bad")));
  EXPECT_EQ(r.code, 2);
  r = test::run(test::trainrun("cv " + base + "output.dir=" + (dir / "bad") + " --folds 400"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("data.cv_folds: cannot have 400 folds of 300 examples"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

}  // namespace
}  // namespace trainrun
