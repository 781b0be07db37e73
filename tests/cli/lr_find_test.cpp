// `trainrun lr-find` through the binary: the same curve on one process and on two (the loss of
// each step reduced over ranks, the same global batch), nothing of a finished run's folder
// changed but the lr_find/ folder added, no temporary folder left, the printed suggestions those
// of the written curve; a test that diverges stops; bad options are exit 2.
#include "runner/train/lr_finder.h"
#include "test_util.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class LrFind : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
  std::string base = test::source("recipes/quickstart.yaml") +
                     " data.max_train_samples=2000 data.max_eval_samples=200 data.workers=0 world.threads_per_proc=1 ";
};

// Every file under `root` (path -> bytes).
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = test::read_file(e.path().string());
  return files;
}

LrFindCurve read_curve(const std::string& csv_path) {
  std::ifstream csv(csv_path);
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "step,lr,loss,smoothed_loss");
  LrFindCurve c;
  while (std::getline(csv, line)) {
    std::stringstream s(line);
    std::string step, lr, loss, smoothed;
    std::getline(s, step, ','), std::getline(s, lr, ','), std::getline(s, loss, ','), std::getline(s, smoothed, ',');
    c.lrs.push_back(std::stod(lr)), c.losses.push_back(std::stod(loss)), c.smoothed.push_back(std::stod(smoothed));
  }
  return c;
}

TEST_F(LrFind, SameCurveOnOneAndTwoProcessesAndTheRunFolderUntouched) {
  const std::string run = dir / "run";
  auto trained = test::run(test::trainrun(base + "world.nproc_per_node=1 data.max_train_samples=256 output.dir=" + run));
  ASSERT_EQ(trained.code, 0) << trained.err;
  const auto before = snapshot(run);
  fs::create_directories(dir / "tmp");
  // No dropout: each rank draws its masks from its own generator (as under DDP), so with dropout
  // one process and two would not train the same steps. 2048 examples: 32 whole steps an epoch
  // (a short last step divides its gradient by the accumulation steps of one process, as the
  // Trainer does, which two processes without accumulation do not).
  const std::string find = "TMPDIR=" + (dir / "tmp") + " " + test::trainrun("lr-find " + base + "data.max_train_samples=2048 data.global_batch_size=64 "
                                                                              "data.batch_size=32 model.dropout1=0 "
                                                                              "model.dropout2=0 output.dir=" + run +
                                                                              " --steps 40 --end 1e-2 ");
  auto one = test::run(find + "world.nproc_per_node=1");
  ASSERT_EQ(one.code, 0) << one.out << one.err;
  auto two = test::run(find + "world.nproc_per_node=2 --output " + (dir / "two"));
  ASSERT_EQ(two.code, 0) << two.out << two.err;

  // The run's files as they were; lr_find/ beside them; no scratch folder left.
  auto after = snapshot(run);
  EXPECT_TRUE(after.count("lr_find/lr_find.csv") && after.count("lr_find/lr_find.png"));
  EXPECT_EQ(after["lr_find/lr_find.png"].substr(1, 3), "PNG");
  after.erase("lr_find/lr_find.csv"), after.erase("lr_find/lr_find.png");
  EXPECT_EQ(after, before);
  EXPECT_TRUE(fs::is_empty(dir / "tmp"));

  const LrFindCurve a = read_curve(run + "/lr_find/lr_find.csv"), b = read_curve(dir / "two/lr_find.csv");
  ASSERT_EQ(a.lrs.size(), 40u);
  ASSERT_EQ(b.lrs.size(), 40u);
  for (std::size_t i = 0; i < a.lrs.size(); ++i) {
    EXPECT_EQ(a.lrs[i], b.lrs[i]);
    // One process sums the two micro-batches' gradients, two processes all-reduce them: the
    // float order differs, and nothing else.
    EXPECT_NEAR(a.losses[i], b.losses[i], 1e-5 * a.losses[i]) << i;
  }
  // The printed suggestions are fastai's functions on the written curve.
  const LrSuggestions s = suggest_lrs(a, 40);
  ASSERT_TRUE(s.steep && s.minimum);
  EXPECT_NE(one.out.find(fmt::format("steep    {:.2e}", s.steep->lr)), std::string::npos) << one.out;
  EXPECT_NE(one.out.find(fmt::format("minimum  {:.2e}", s.minimum->lr)), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("stopped: all 40 steps"), std::string::npos) << one.out;
}

TEST_F(LrFind, StopsWhereTheLossDiverges) {
  auto r = test::run(test::trainrun("lr-find " + base + "world.nproc_per_node=1 --start 1e-4 --end 1e4 --steps 80 --output " +
                                    (dir / "out")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const LrFindCurve c = read_curve(dir / "out/lr_find.csv");
  EXPECT_LT(c.lrs.size(), 80u);
  EXPECT_TRUE(r.out.find("diverged at step " + std::to_string(c.lrs.size())) != std::string::npos ||
              r.out.find("at step " + std::to_string(c.lrs.size())) != std::string::npos)
      << r.out;
}

TEST_F(LrFind, BadOptionsAreExit2) {
  auto r = test::run(test::trainrun("lr-find " + base + "--start 0 --output " + (dir / "out")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("lr-find: --start 0: must be above 0"), std::string::npos) << r.err;
  r = test::run(test::trainrun("lr-find " + base + "--steps 3 --output " + (dir / "out")));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace trainrun
