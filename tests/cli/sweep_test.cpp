// `trainrun sweep` through the binary: four combinations run two at a time give the runs four
// separate `trainrun` runs with the same overrides give (the same weights, byte for byte), the
// report sorted by the best metric with each run's figures; a sweep stopped with SIGTERM in its
// second run skips the finished first run when started again and resumes the second, which ends
// as an uninterrupted run does.
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
  std::string base = test::source("recipes/quickstart.yaml") +
                     " data.max_train_samples=256 data.max_eval_samples=128 data.workers=0 world.nproc_per_node=1 "
                     "world.threads_per_proc=1 train.log_every_steps=4 ";
};

// The lowest eval_loss in a run's metrics.jsonl.
double best_eval_loss(const std::string& run) {
  double best = INFINITY;
  for (const auto& l : test::read_jsonl(run + "/metrics.jsonl"))
    if (l.contains("eval_loss")) best = std::min(best, l["eval_loss"].get<double>());
  return best;
}

TEST_F(Sweep, FourCombinationsTwoAtATimeEqualFourSeparateRuns) {
  auto r = test::run(test::trainrun("sweep " + base + "optimizer.lr=1e-3,3e-3 data.batch_size=32,64 output.dir=" +
                                    (dir / "sw") + " --parallel 2"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"000-optimizer.lr=1e-3,data.batch_size=32", "optimizer.lr=1e-3 data.batch_size=32"},
      {"001-optimizer.lr=1e-3,data.batch_size=64", "optimizer.lr=1e-3 data.batch_size=64"},
      {"002-optimizer.lr=3e-3,data.batch_size=32", "optimizer.lr=3e-3 data.batch_size=32"},
      {"003-optimizer.lr=3e-3,data.batch_size=64", "optimizer.lr=3e-3 data.batch_size=64"}};
  std::map<std::string, double> best;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string swept = dir / ("sw/sweep/" + runs[i].first), alone = dir / ("alone-" + std::to_string(i));
    auto s = test::run(test::trainrun(base + runs[i].second + " output.dir=" + alone));
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_TRUE(test::read_file(swept + "/model.safetensors") == test::read_file(alone + "/model.safetensors")) << runs[i].first;
    EXPECT_EQ(best_eval_loss(swept), best_eval_loss(alone));
    best[runs[i].first] = best_eval_loss(swept);
    EXPECT_TRUE(fs::exists(dir / ("sw/sweep/" + runs[i].first + ".log")));  // two at a time: each run's console in a file
  }
  // The report: a row per run, lowest eval_loss first, each with its swept values and figures.
  std::ifstream csv(dir / "sw/sweep/sweep_report.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("run,optimizer.lr,data.batch_size,status,best_eval_loss,best_step,last_eval_accuracy", 0), 0u) << header;
  double previous = -INFINITY;
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    // The run's name has commas, so the CSV quotes it.
    ASSERT_EQ(line[0], '"') << line;
    const std::string run = line.substr(1, line.find('"', 1) - 1);
    EXPECT_NE(line.find(",finished,"), std::string::npos) << line;
    const std::size_t at = line.find(",finished,") + 10;
    const double value = std::stod(line.substr(at, line.find(',', at) - at));
    EXPECT_EQ(value, best.at(run)) << line;  // every digit
    EXPECT_GE(value, previous);
    previous = value;
  }
  EXPECT_EQ(rows, 4);
  EXPECT_EQ(test::read_file(dir / "sw/sweep/sweep_plot.png").substr(1, 3), "PNG");
  EXPECT_NE(r.out.find("| 00"), std::string::npos) << r.out;  // the table on the console
}

TEST_F(Sweep, AStoppedSweepSkipsItsFinishedRunAndResumesTheInterruptedOne) {
  const std::string out = dir / "k", second = out + "/sweep/001-optimizer.lr=2e-3";
  const std::string sweep = test::trainrun("sweep " + base + "optimizer.lr=1e-3,2e-3 output.save_every=2 output.dir=" + out);
  // Slow steps, so that the signal comes while the second run trains; SIGTERM once it has a checkpoint.
  auto r = test::run("bash -c 'TRAINRUN_STEP_DELAY_MS=150 " + sweep + " >" + (dir / "out1") + " 2>&1 & L=$!; " +
                     "for i in $(seq 1200); do [ -e " + second + "/checkpoint-2/trainer_state.json ] && break; sleep 0.05; done; " +
                     "kill -TERM $L; wait $L; echo rc=$?'");
  ASSERT_NE(r.out.find("rc=130"), std::string::npos) << r.out << test::read_file(dir / "out1");
  ASSERT_TRUE(fs::exists(out + "/sweep/000-optimizer.lr=1e-3/model.safetensors"));
  ASSERT_FALSE(fs::exists(second + "/model.safetensors"));  // stopped before its end

  auto again = test::run(sweep);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("000-optimizer.lr=1e-3: finished in an earlier session; skipped"), std::string::npos) << again.out;
  EXPECT_NE(test::read_file(second + "/train.log").find("Resuming from"), std::string::npos);
  auto alone = test::run(test::trainrun(base + "optimizer.lr=2e-3 output.save_every=2 output.dir=" + (dir / "alone")));
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_TRUE(test::read_file(second + "/model.safetensors") == test::read_file(dir / "alone/model.safetensors"));
  EXPECT_NE(test::read_file(out + "/sweep/sweep_report.md").find("| 001-optimizer.lr=2e-3 | 2e-3 | finished |"), std::string::npos);
}

TEST_F(Sweep, BadSweepsAreExit2WithNothingStarted) {
  auto r = test::run(test::trainrun("sweep " + base + "optimizer.lr=1e-3,1e-2 optimizer.lrr=1,2 output.dir=" + (dir / "bad")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sweep: run 000-optimizer.lr=1e-3,optimizer.lrr=1: "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "bad"));
  r = test::run(test::trainrun("sweep " + base + "optimizer.lr=1e-3 output.dir=" + (dir / "bad")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sweep: nothing to sweep"), std::string::npos) << r.err;
  r = test::run(test::trainrun("sweep " + base + "optimizer.lr=1e-3,1e-2 world.threads_per_proc=2 --parallel 64 output.dir=" + (dir / "bad")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sweep: --parallel 64: 64 run(s) x 1 process(es) x 2 thread(s)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainrun
