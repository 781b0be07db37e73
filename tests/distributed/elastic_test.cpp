// torchrun's elastic membership with trainrun as its worker: `--nnodes 1:2 --rdzv-backend c10d`
// on two nodes (network namespaces joined by veth, tests/test_util.h's TwoNodes), Debian's real
// torchrun (tests/py/torchrun.py). Node 0 starts alone; node 1 joins mid-run, and node 0's agent
// restarts the world with both; then node 1 dies (every process on it SIGKILLed) and the
// survivor's agent restarts the world with node 0 alone. Each new world resumes from the newest
// checkpoint in the shared run folder on its own number of processes, and data.global_batch_size
// keeps 64 examples a step throughout. The run is compared with the same world changes made at the
// same steps by hand: the same losses and weights to the bit. (Against one process never
// interrupted it is not exact: the steps on two processes sum in another order, and this high
// learning rate magnifies that, 3e-6 at step 28 to 1e-2 by step 60; WorldChange.* bounds the
// change itself over shorter runs.)
#include "support/same_run.h"
#include "test_util.h"

#include <regex>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

TEST(Elastic, TorchrunNodeJoinsThenDiesAndTheRunEqualsTheSameChangesMadeByHand) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (test::run(std::string(test::kPython) + " -c 'import torch.distributed.run'").code != 0)
    GTEST_SKIP() << "python3-torch is not installed";
  test::TwoNodes nodes;
  if (!nodes.ok()) GTEST_SKIP() << "cannot create network namespaces here (needs root and iproute2): " << nodes.why();
  test::TempDir dir;
  // 3,840 examples, 64 a step: 60 steps, a checkpoint every 5; 32 a process per micro-batch (2
  // micro-batches on one node, 1 on two). Deterministic: no dropout, no loader threads, 1 thread.
  const std::string recipe = test::source("recipes/quickstart.yaml") +
                             " data.max_train_samples=3840 data.max_eval_samples=200 data.workers=0"
                             " world.threads_per_proc=1 data.batch_size=32 data.global_batch_size=64"
                             " model.dropout1=0 model.dropout2=0 'optimizer={name: sgd, lr: 0.05, momentum: 0.9}'"
                             " train.log_every_steps=1 output.save_every=5";
  const std::string torchrun = std::string(test::kPython) + " " + test::source("tests/py/torchrun.py") +
                               " --nnodes 1:2 --nproc_per_node 1 --max_restarts 3 --monitor_interval 1"
                               " --rdzv_backend c10d --rdzv_endpoint 10.231.0.1:29400 --rdzv_id elastic-test"
                               " --rdzv_conf last_call_timeout=1 --no_python " + TRAINRUN_BINARY + " " + recipe +
                               " output.dir=" + (dir / "run");
  const std::string run = dir / "run";
  // 150 ms a step (TRAINRUN_STEP_DELAY_MS): the join and the death land mid-run.
  auto r = test::run_script(
      dir, "export TRAINRUN_STEP_DELAY_MS=150\n" + nodes.exec(0) + torchrun + " >" + (dir / "n0") + " 2>&1 & P0=$!\n" +
               "for i in $(seq 600); do [ -e " + run + "/checkpoint-5/trainer_state.json ] && break; sleep 0.1; done\n" +
               nodes.exec(1) + torchrun + " >" + (dir / "n1") + " 2>&1 & P1=$!\n" +
               "for i in $(seq 1200); do grep -qs '\"world_size\": 2' " + run + "/checkpoint-*/trainrun_state.json && "
               "break; sleep 0.1; done\n" + nodes.kill_all(1) + "\nwait $P1\nwait $P0; echo rc0=$?\n");
  const std::string n0 = test::read_file(dir / "n0"), n1 = test::read_file(dir / "n1");
  ASSERT_NE(r.out.find("rc0=0"), std::string::npos) << r.out << r.err << "\n--- node 0\n" << n0 << "\n--- node 1\n" << n1;
  // Alone, then with node 1 (a membership change), then alone again (a restart after a failure).
  const auto alone = n0.find("World = 1 node x 1 process ("), both = n0.find("World = 2 nodes x 1 process (");
  ASSERT_NE(alone, std::string::npos) << n0;
  ASSERT_NE(both, std::string::npos) << n0;
  EXPECT_LT(alone, both);
  EXPECT_NE(n0.find("World = 1 node x 1 process (", both), std::string::npos) << n0;
  EXPECT_NE(n0.find("Resuming from " + run + "/checkpoint-"), std::string::npos) << n0;
  EXPECT_NE(n0.find("was saved by 2 process(es), this run has 1"), std::string::npos) << n0;
  EXPECT_NE(n0.find("was saved by 1 process(es), this run has 2"), std::string::npos) << n0;

  // The same world changes at the same checkpoints with trainrun's own launcher, stopped by
  // TRAINRUN_INTERRUPT_AT_STEP: the elastic run must be that run to the bit (the same examples each
  // step, the same sums), whichever checkpoints the agents' restarts picked.
  std::vector<int64_t> resumed;
  const std::regex from("Resuming from " + run + "/checkpoint-([0-9]+)");
  for (auto it = std::sregex_iterator(n0.begin(), n0.end(), from); it != std::sregex_iterator(); ++it)
    resumed.push_back(std::stoll((*it)[1].str()));
  ASSERT_EQ(resumed.size(), 2u) << n0;
  auto own = [&](int procs, const std::string& stop) {
    return test::run((stop.empty() ? "" : "TRAINRUN_INTERRUPT_AT_STEP=" + stop + " ") +
                     test::trainrun(recipe + " world.nproc_per_node=" + std::to_string(procs) +
                                    " world.master_port=0 output.dir=" + (dir / "own")));
  };
  EXPECT_EQ(own(1, std::to_string(resumed[0])).code, 130);
  EXPECT_EQ(own(2, std::to_string(resumed[1])).code, 130);
  ASSERT_EQ(own(1, "").code, 0);
  const auto elastic = test::by_step(run + "/metrics.jsonl", "loss"), same = test::by_step(dir / "own/metrics.jsonl", "loss");
  EXPECT_EQ(elastic.size(), 60u);
  EXPECT_EQ(elastic, same);
  EXPECT_TRUE(test::read_file(run + "/model.safetensors") == test::read_file(dir / "own/model.safetensors"))
      << "final weights differ";
}

}  // namespace
}  // namespace trainrun
