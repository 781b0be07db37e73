// trainrun as the worker of the real Open MPI mpirun (no OMPI_* variables set by hand): mpirun
// starts the processes, trainrun reads OMPI_COMM_WORLD_* and talks gloo over 127.0.0.1.
#include "launcher_util.h"
#include "support/safetensors.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <regex>

namespace trainrun {
namespace {

// `mpirun -np 2 trainrun ARGS`, with only what Open MPI 4.1 needs here:
//  --allow-run-as-root  mpirun refuses to start as root without it (the tests run as root in a
//                       container; OMPI_ALLOW_RUN_AS_ROOT=1 + OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 is
//                       the same as variables).
//  --oversubscribe      mpirun gives one slot per core and refuses -np 2 on a 1-core machine.
//  -x MASTER_ADDR/PORT  exported to every rank; rank 0 hosts the c10d TCPStore there (ranks on
//                       this node would inherit mpirun's environment anyway, -x is what reaches
//                       other nodes).
// Not needed: `--mca btl self,tcp` and the like (trainrun never calls MPI_Init: mpirun only
// starts the processes and gloo carries the traffic), `--mca plm_rsh_agent` (a one-node job
// starts without ssh/rsh), `--bind-to none` (the default binding, one core per rank for -np 2,
// changes speed, not results). stdin is /dev/null: mpirun forwards its stdin to rank 0.
std::string mpirun(const std::string& args) {
  return test::without_enclosing_launcher() +
         "mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=" +
         std::to_string(test::free_port()) + " " + test::trainrun(args) + " </dev/null";
}

class Mpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    if (test::run("command -v mpirun").code != 0) GTEST_SKIP() << "openmpi-bin is not installed";
  }
  test::TempDir dir;
  std::string recipe = test::source("recipes/quickstart.yaml");
};

// world.nproc_per_node=1 loses to mpirun's -np 2; eval shards are unpadded, so 201 examples over
// two ranks count 201 times, not 202.
TEST_F(Mpirun, TrainsAsTwoRanksAndCountsEveryEvalExampleOnce) {
  auto r = test::run(mpirun(recipe + " data.max_train_samples=512 data.max_eval_samples=201 world.nproc_per_node=1 "
                            "output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("World = 1 node x 2 processes (gloo backend, launched by mpi)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total train batch size (w. parallel, distributed & accumulation) = 128"), std::string::npos)
      << r.out;
  nlohmann::json eval;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (l.contains("eval_examples")) eval = l;
  EXPECT_EQ(eval["eval_examples"], 201) << eval;
  EXPECT_EQ(eval["step"], 4) << eval;  // 512 / (2 x 64)
  EXPECT_TRUE(std::filesystem::exists(dir / "run/model.safetensors"));
}

// DDP parity through mpirun: 10 SGD+momentum steps with 2 ranks x batch 32 give the parameters of
// 1 process x batch 64 (as Distributed.TwoRanksEqualOneRankWithTheCombinedBatch with trainrun's
// own launcher).
TEST_F(Mpirun, TwoRanksEqualOneRankWithTheCombinedBatch) {
  std::string common = recipe + " model.dropout1=0 model.dropout2=0 'optimizer={name: sgd, lr: 0.05, momentum: 0.9}' "
                       "data.max_train_samples=640 data.workers=0 train.eval_every=never ";
  auto two = test::run(mpirun(common + "world.nproc_per_node=1 data.batch_size=32 output.dir=" + (dir / "two")));
  ASSERT_EQ(two.code, 0) << two.out << two.err;
  EXPECT_NE(two.out.find("launched by mpi"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("Total optimization steps = 10"), std::string::npos) << two.out;
  auto one = test::run(test::trainrun(common + "world.nproc_per_node=1 data.batch_size=64 output.dir=" + (dir / "one")));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("World = 1 node x 1 process "), std::string::npos) << one.out;
  TensorList a = load_safetensors(dir / "two/model.safetensors"), b = load_safetensors(dir / "one/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    double diff = (a[i].second - b[i].second).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5) << a[i].first;
  }
}

// Pre-emption under mpirun (an MPIJob, a batch script around mpirun): mpirun forwards SIGUSR1 to
// every rank; they stop after the same step, save a checkpoint, exit 138, and mpirun exits 138.
// The same command again resumes from that checkpoint. With `slow_save`, rank 0's fsyncs are
// delayed 2 s each (strace attached to it once a loss was logged), as on a slow file system.
void sigusr1_on_mpirun_then_resume(const test::TempDir& dir, const std::string& recipe, bool slow_save) {
  std::string cmd = mpirun(recipe + " data.max_train_samples=3840 data.max_eval_samples=200 train.log_every_steps=5 "
                           "world.nproc_per_node=1 output.dir=" + (dir / "run"));
  std::string slow = "for p in $(pgrep -P $L); do tr \"\\0\" \"\\n\" </proc/$p/environ | "
                     "grep -qx OMPI_COMM_WORLD_RANK=0 && { strace -f -qq -o /dev/null -e trace=fsync "
                     "-e inject=fsync:delay_enter=2s -p $p & sleep 1; }; done; ";
  // LeakSanitizer (make test-asan) cannot run in a process that exits traced: not for that one.
  std::string traced = slow_save ? "ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 " : "";
  auto r = test::run("bash -c '" + traced + cmd + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!; " +
                     "for i in $(seq 600); do grep -q loss " + (dir / "out") + " && break; sleep 0.1; done; " +
                     (slow_save ? slow : "") + "kill -USR1 $L; wait $L; echo rc=$?'");
  std::string err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=138"), std::string::npos) << r.out << err;
  // Only mpirun was signalled: each rank's own line shows that mpirun forwarded SIGUSR1 to it
  // (Open MPI 4 also says "mpirun: Forwarding signal 10 to job"; Open MPI 5's prterun says nothing).
  for (const char* rank : {"rank 0: ", "rank 1: "})
    EXPECT_NE(err.find(std::string(rank) + "interrupted (User defined signal 1) at step"), std::string::npos) << err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(interrupted \(User defined signal 1\) at step (\d+); checkpoint saved)")))
      << err;
  std::string step = m[1].str();
  ASSERT_TRUE(std::filesystem::exists(dir / ("run/checkpoint-" + step + "/trainer_state.json")))
      << "the checkpoint of step " << step << " is not there:\n" << test::run("ls -la " + (dir / "run")).out << err;

  auto again = test::run(cmd);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("Resuming from " + (dir / "run/checkpoint-") + step), std::string::npos) << again.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "run/model.safetensors"));
}

TEST_F(Mpirun, Sigusr1OnMpirunCheckpointsEveryRankAndTheRerunResumes) {
  sigusr1_on_mpirun_then_resume(dir, recipe, false);
}

// mpirun ends the whole job as soon as one rank exits non-zero (SIGTERM, then SIGKILL), as do
// torchrun's agent and srun --kill-on-bad-exit: a rank that exits 138 before rank 0 has written
// the checkpoint would get it killed mid-save. Every rank waits for rank 0's save before exiting
// (without that wait, only .checkpoint-N.tmp was left, yet mpirun exited 138).
TEST_F(Mpirun, Sigusr1CheckpointSurvivesASlowSaveOnRankZero) {
  if (test::run("command -v strace").code != 0) GTEST_SKIP() << "strace is not installed";
  sigusr1_on_mpirun_then_resume(dir, recipe, true);
}

}  // namespace
}  // namespace trainrun
