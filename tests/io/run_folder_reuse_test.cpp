// A run folder is never silently reused (runner/recipe/resume_plan.h): output.resume: auto
// continues only a checkpoint of the same job, refuses another job's folder in one line (exit 2,
// nothing written), says that a finished run is finished (exit 0, nothing trained, no summary),
// and continues a finished run when train.epochs grows. `check` says which of these a run would
// do. Driven through the binary, on the quickstart recipe cut to 8 steps in one process.
#include "support/finished_demo.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RunFolderReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  // 256 examples, batch 32: 8 optimizer steps an epoch, in one process.
  std::string args(const std::string& more = "") const {
    return test::source("recipes/quickstart.yaml") +
           " data.max_train_samples=256 data.max_eval_samples=200 data.batch_size=32 data.workers=1"
           " train.log_every_steps=4 world.nproc_per_node=1 world.master_port=0 output.dir=" + (dir / "run") + " " + more;
  }
  test::RunResult train(const std::string& more = "") const { return test::run(test::trainrun(args(more))); }
  test::RunResult check(const std::string& more = "") const { return test::run(test::trainrun("check " + args(more))); }
  test::TempDir dir;
};

TEST_F(RunFolderReuse, SameJobResumesAnotherIsRefusedAFinishedOneTrainsNothing) {
  // Before any run: check says it starts.
  auto plan = check();
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(plan.out.find("run folder: start in " + (dir / "run") + " (no checkpoint there)"), std::string::npos) << plan.out;

  // Interrupted at step 4, then the same command again (another data.workers and logging: the
  // same job) resumes there.
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=4 " + test::trainrun(args()));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  plan = check("data.workers=0 train.log_every_steps=2");
  EXPECT_NE(plan.out.find("run folder: resume from " + (dir / "run/checkpoint-4") + " (step 4 of 8)"), std::string::npos)
      << plan.out;
  auto resumed = train("data.workers=0 train.log_every_steps=2");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resuming from " + (dir / "run/checkpoint-4")), std::string::npos) << resumed.out;
  // One process on its own says so in words (it said "none backend, launched by none").
  EXPECT_NE(resumed.out.find("  World = 1 node x 1 process (no process group, started directly), "), std::string::npos)
      << resumed.out;
  // The resolved recipe the run writes holds what ran: no `auto` for the machine's choices, no YAML anchors.
  const std::string resolved = test::read_file(dir / "run/recipe.resolved.yaml");
  for (const char* needle : {"\nmemory_format: contiguous\n", "  device: cpu\n", "  backend: gloo\n", "  eval_batch_size: 1000\n",
                             "#   memory_format: contiguous (basicnet does not gain from NHWC)\n"})
    EXPECT_NE(resolved.find(needle), std::string::npos) << needle << "\n" << resolved;
  EXPECT_EQ(resolved.find("&1"), std::string::npos) << resolved;
  json state = json::parse(test::read_file(dir / "run/checkpoint-8/trainrun_state.json"));
  EXPECT_EQ(state["job"]["optimizer"]["lr"], 0.001) << state.dump();
  EXPECT_EQ(state["job"]["global_batch_size"], 32) << state.dump();
  EXPECT_FALSE(state["job"].contains("world")) << state.dump();

  // Another learning rate (written another way than the recipe's 1.0e-3 for the same lr: not a
  // difference), another optimizer: another job. One line, exit 2, nothing written.
  const auto before = test::snapshot(dir / "run");
  auto same = check("optimizer.lr=0.001");
  EXPECT_EQ(same.out.find("refuse"), std::string::npos) << same.out;
  auto refused = train("optimizer.lr=3e-4 'optimizer.name=lamb'");
  EXPECT_EQ(refused.code, 2) << refused.out;
  // The first differences in recipe order (lamb's defaults differ from adamw's too), then what to do.
  EXPECT_EQ(refused.err.rfind(dir / "run" + " holds another run: optimizer.name adamw -> lamb, optimizer.lr 0.001 -> 0.0003", 0), 0u)
      << refused.err;
  const std::string advice = "; use output.dir=..., or output.resume=never to start over in it\n";
  EXPECT_TRUE(refused.err.size() > advice.size() && refused.err.substr(refused.err.size() - advice.size()) == advice)
      << refused.err;
  EXPECT_EQ(test::count_lines(refused.err), 1) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(test::snapshot(dir / "run"), before);
  plan = check("optimizer.lr=3e-4");
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(plan.out.find("run folder: refuse (exit 2): " + (dir / "run") + " holds another run: optimizer.lr 0.001 -> 0.0003;"),
            std::string::npos) << plan.out;
  // Two processes with the same per-process batch double the global batch: another job.
  refused = train("world.nproc_per_node=2");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.err.find("holds another run: global_batch_size 32 -> 64;"), std::string::npos) << refused.err;

  // The same job again: finished, nothing trained, nothing written.
  auto again = train();
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, dir / "run" + ": finished at step 8 (epoch 1 of 1); nothing to train\n");
  EXPECT_EQ(test::snapshot(dir / "run"), before);
  // Two processes with half the batch each: the same global batch, the same job, finished too.
  again = train("world.nproc_per_node=2 data.batch_size=16");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("finished at step 8"), std::string::npos) << again.out;
  plan = check();
  EXPECT_NE(plan.out.find("run folder: nothing: " + (dir / "run") + ": finished at step 8 (epoch 1 of 1); nothing to train"),
            std::string::npos) << plan.out;

  // More epochs continue it.
  auto more = train("train.epochs=2");
  ASSERT_EQ(more.code, 0) << more.err;
  EXPECT_NE(more.out.find("Continuing training from epoch 1"), std::string::npos) << more.out;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-16/trainer_state.json"));

  // output.resume=never starts over in the folder; a PATH of another job is resumed as asked, with a warning.
  auto fresh = train("optimizer.lr=3e-4 output.resume=never");
  ASSERT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_EQ(fresh.out.find("Resuming"), std::string::npos) << fresh.out;
  auto asked = train("optimizer.lr=0.001 train.epochs=3 output.resume=" + (dir / "run/checkpoint-8"));
  ASSERT_EQ(asked.code, 0) << asked.err;
  EXPECT_NE(asked.out.find("output.resume: " + (dir / "run/checkpoint-8") +
                           " was saved by another job (optimizer.lr 0.0003 -> 0.001); resuming from it as asked"),
            std::string::npos) << asked.out;
}

// A checkpoint written before the fingerprint existed (no "job" in trainrun_state.json) is
// resumed as before.
// Stopped during its last step (a Ctrl-C, a pre-emption), a run has a checkpoint at that step but
// not its end: the final model.safetensors and summary. The same command again resumes, trains
// nothing and writes them (it once said "finished" and left the run without its model).
TEST_F(RunFolderReuse, AStopInTheLastStepIsResumedToTheRunsEnd) {
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=8 " + test::trainrun(args()));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  ASSERT_TRUE(fs::exists(dir / "run/checkpoint-8/trainer_state.json"));
  ASSERT_FALSE(fs::exists(dir / "run/model.safetensors"));
  auto plan = check();
  EXPECT_NE(plan.out.find("run folder: resume from " + (dir / "run/checkpoint-8") + " (step 8 of 8)"), std::string::npos)
      << plan.out;
  auto resumed = train();
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resuming from " + (dir / "run/checkpoint-8")), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("Training completed."), std::string::npos) << resumed.out;
  EXPECT_TRUE(fs::exists(dir / "run/model.safetensors"));
  EXPECT_NE(test::read_file(dir / "run/metrics.jsonl").find("train_runtime"), std::string::npos);
  auto again = train();
  EXPECT_EQ(again.out, dir / "run" + ": finished at step 8 (epoch 1 of 1); nothing to train\n");
}

TEST_F(RunFolderReuse, ACheckpointWithoutAFingerprintResumes) {
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=4 " + test::trainrun(args()));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  const std::string file = dir / "run/checkpoint-4/trainrun_state.json";
  json state = json::parse(test::read_file(file));
  ASSERT_TRUE(state.contains("job"));
  state.erase("job");
  test::write_file(file, state.dump(2));
  auto resumed = train("optimizer.lr=3e-4");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resuming from " + (dir / "run/checkpoint-4")), std::string::npos) << resumed.out;
}

}  // namespace
}  // namespace trainrun
