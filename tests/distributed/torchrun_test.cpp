// trainrun as a `--no_python` worker of Debian's real torchrun (python3 -m torch.distributed.run,
// torch 1.13), in each rendezvous mode. tests/py/torchrun.py runs torchrun with only its Python
// 3.11 crash fixed (see the file); everything else is torchrun's own code.
#include "support/safetensors.h"

#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

using nlohmann::json;

std::string torchrun(const std::string& args) {
  return std::string(test::kPython) + " " + test::source("tests/py/torchrun.py") + " " + args;
}

// The largest absolute difference between two model.safetensors files (-1 if the keys differ).
double max_weight_difference(const std::string& a, const std::string& b) {
  TensorList x = load_safetensors(a), y = load_safetensors(b);
  if (x.size() != y.size()) return -1;
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].first != y[i].first) return -1;
    worst = std::max(worst, (x[i].second.to(at::kDouble) - y[i].second.to(at::kDouble)).abs().max().item<double>());
  }
  return worst;
}

int64_t eval_examples(const std::string& metrics) {
  for (auto& line : test::read_jsonl(metrics))
    if (line.contains("eval_examples")) return line["eval_examples"].get<int64_t>();
  return -1;
}

class Torchrun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    if (test::run(std::string(test::kPython) + " -c 'import torch.distributed.run'").code != 0)
      GTEST_SKIP() << "python3-torch is not installed";
  }
  test::TempDir dir;
  // A short run: 4 steps of 2 x 64, 200 test images; deterministic (no loader threads, 1 thread).
  std::string recipe = test::source("recipes/quickstart.yaml") +
                       " data.max_train_samples=512 data.max_eval_samples=200 data.workers=0 world.threads_per_proc=1";
};

// torchrun's default (static rendezvous): its agent serves the store on MASTER_PORT and the
// workers join it as clients (TORCHELASTIC_USE_AGENT_STORE=True). Same weights as trainrun's own
// launcher, to the bit.
TEST_F(Torchrun, StaticRendezvousJoinsTheAgentStore) {
  auto r = test::run(torchrun("--nproc_per_node 2 --master_port " + std::to_string(test::free_port()) +
                              " --no_python " + TRAINRUN_BINARY + " " + recipe + " output.dir=" + (dir / "tr")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("World = 1 node x 2 processes (gloo backend, launched by torchrun)"), std::string::npos) << r.out;
  EXPECT_EQ(eval_examples(dir / "tr/metrics.jsonl"), 200);

  auto own = test::run(test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 output.dir=" + (dir / "own")));
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_EQ(max_weight_difference(dir / "tr/model.safetensors", dir / "own/model.safetensors"), 0.0);
}

// --standalone: a c10d rendezvous on localhost; rank 0 serves the store on the port torchrun picked.
TEST_F(Torchrun, Standalone) {
  auto r = test::run(torchrun("--standalone --nproc_per_node 2 --no_python " + std::string(TRAINRUN_BINARY) + " " +
                              recipe + " output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("World = 1 node x 2 processes (gloo backend, launched by torchrun)"), std::string::npos) << r.out;
  EXPECT_EQ(eval_examples(dir / "run/metrics.jsonl"), 200);
}

// A failing worker writes torchrun's error file, so the summary shows trainrun's line.
TEST_F(Torchrun, ErrorFileShowsTheOneLineError) {
  auto r = test::run(torchrun("--nproc_per_node 2 --master_port " + std::to_string(test::free_port()) +
                              " --no_python " + TRAINRUN_BINARY + " " + recipe + " optimizer.lrr=3 output.dir=" +
                              (dir / "run")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("exitcode  : 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("traceback : command line 'optimizer.lrr=3': optimizer.lrr: unknown key (did you mean 'lr'?)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("error_file: <N/A>"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "run"));
}

// --rdzv_backend c10d across two nodes (network namespaces joined by veth) x 2 processes: the
// agents meet at node 0's c10d store; the workers' rank 0 serves theirs at the hostname torchrun
// advertises (which resolves to node 0 on both nodes).
TEST_F(Torchrun, C10dRendezvousTwoNodesTimesTwoProcesses) {
  test::TwoNodes nodes;
  if (!nodes.ok()) GTEST_SKIP() << "cannot create network namespaces here (needs root and iproute2): " << nodes.why();
  std::string common = "--nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint 10.231.0.1:29400 "
                       "--rdzv_id trainrun-test --no_python " + std::string(TRAINRUN_BINARY) + " " + recipe +
                       " data.max_eval_samples=333 output.dir=" + (dir / "run");
  auto r = test::run("bash -c '" + nodes.exec(1) + torchrun(common) + " >" + (dir / "n1") + " 2>&1 & p=$!; " +
                     nodes.exec(0) + torchrun(common) + "; a=$?; wait $p; b=$?; exit $((a + b))'");
  ASSERT_EQ(r.code, 0) << r.out << r.err << test::read_file(dir / "n1");
  std::string both = r.out + test::read_file(dir / "n1");
  EXPECT_NE(both.find("World = 2 nodes x 2 processes (gloo backend, launched by torchrun)"), std::string::npos) << both;
  EXPECT_NE(both.find("Total train batch size (w. parallel, distributed & accumulation) = 256"), std::string::npos);
  EXPECT_EQ(eval_examples(dir / "run/metrics.jsonl"), 333);
}

// --max_restarts 1: a worker killed mid-run; torchrun restarts the world, which resumes from the
// newest checkpoint and ends with the weights of a run that was never interrupted.
TEST_F(Torchrun, MaxRestartsResumesFromTheNewestCheckpoint) {
  std::string longer = recipe + " data.max_train_samples=1920 train.log_every_steps=3 output.save_every=3";
  std::string cmd = torchrun("--nproc_per_node 2 --max_restarts 1 --master_port " + std::to_string(test::free_port()) +
                             " --no_python " + TRAINRUN_BINARY + " " + longer + " output.dir=" + (dir / "run"));
  auto r = test::run(test::kill_rank_after_first_log(cmd, dir.path().string(), 1, "Saving model checkpoint"));
  std::string out = test::read_file(dir / "out"), err = test::read_file(dir / "err");
  ASSERT_NE(r.out.find("rc=0"), std::string::npos) << r.out << out << err;
  EXPECT_NE(out.find("Restart 1 of the world: resuming from the newest checkpoint"), std::string::npos) << out;
  EXPECT_NE(out.find("Resuming from " + (dir / "run/checkpoint-")), std::string::npos) << out;

  auto whole = test::run(test::trainrun(longer + " world.nproc_per_node=2 world.master_port=0 output.dir=" + (dir / "whole")));
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(max_weight_difference(dir / "run/model.safetensors", dir / "whole/model.safetensors"), 0.0);
}

}  // namespace
}  // namespace trainrun
