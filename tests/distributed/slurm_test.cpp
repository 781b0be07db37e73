// trainrun under a real SLURM: a single-node cluster of the test's own (munged, slurmctld, slurmd
// from tests/launchers/slurm_cluster.sh, everything in a temp folder, ports chosen free), real
// srun and sbatch; no SLURM_* variable is set by hand (SLURM_CONF only tells the client commands
// where this cluster's slurm.conf is).
#include "launcher_util.h"
#include "support/safetensors.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <regex>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

bool slurm_installed() {
  return test::run("for c in munged slurmctld slurmd sinfo srun sbatch scontrol scancel squeue; do "
                   "command -v $c || exit 1; done").code == 0;
}

// Started in the constructor, stopped (jobs cancelled, daemons ended) in the destructor, also when
// a test failed. The script's watchdog stops it too if this process dies without unwinding.
class SlurmCluster {
 public:
  // One node; or two, node i in `nodes`' namespace i (slurm_cluster.sh's TWO_NODES).
  explicit SlurmCluster(const test::TwoNodes* nodes = nullptr) {
    if (nodes) {
      two_nodes_ = "TWO_NODES='" + nodes->host(0) + " " + nodes->host(1) + "' ";
      client_ = nodes->exec(0);
    }
    auto r = test::run(two_nodes_ + script_ + " start " + dir_.path().string() + " " + std::to_string(::getpid()));
    ok_ = r.code == 0;
    start_output_ = r.out + r.err;
  }
  ~SlurmCluster() { test::run(two_nodes_ + script_ + " stop " + dir_.path().string()); }
  bool ok() const { return ok_; }
  const std::string& start_output() const { return start_output_; }
  // Prefix for a client command (srun, sbatch, scontrol, ...) talking to this cluster, with the
  // variables `vars` ("NAME=value ...") set for it.
  std::string env(const std::string& vars = "") const {
    return test::without_enclosing_launcher() + "SLURM_CONF=" + (dir_ / "slurm.conf") + " " + vars + " " + client_;
  }
  // The daemons' log tails, for failure messages.
  std::string logs() const {
    return test::run("for f in " + (dir_ / "slurmctld.log") + " " + dir_.path().string() +
                     "/slurmd*.log; do echo \"--- tail of $f\"; tail -n 30 $f; done").out;
  }
  // Cancels every job and waits (up to 30 s) until none is left, so a failed test leaves the
  // node free for the next one.
  void cancel_all() const {
    test::run(env() + "scancel --full --user=root; for i in $(seq 150); do [ -z \"$(" + env() +
              "squeue -h -o %i)\" ] && break; sleep 0.2; done");
  }

 private:
  test::TempDir dir_;  // first: removed after the daemons have stopped
  std::string script_ = test::source("tests/launchers/slurm_cluster.sh");
  std::string two_nodes_, client_;
  bool ok_ = false;
  std::string start_output_;
};

class Slurm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (slurm_installed() && ::geteuid() == 0) cluster_ = std::make_unique<SlurmCluster>();
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    if (!slurm_installed()) GTEST_SKIP() << "slurm-wlm and munge are not installed (scripts/setup.sh --test)";
    if (::geteuid() != 0) GTEST_SKIP() << "the test cluster's slurmd runs as root";
    // Not a skip: a cluster that does not start is a failure, with the daemons' logs.
    ASSERT_TRUE(cluster_ && cluster_->ok()) << (cluster_ ? cluster_->start_output() : "");
  }
  void TearDown() override {
    if (cluster_ && cluster_->ok()) cluster_->cancel_all();
  }

  static inline std::unique_ptr<SlurmCluster> cluster_;
  test::TempDir dir;
  std::string recipe = test::source("recipes/quickstart.yaml");
};

// A batch script as docs/guides/distributed.md's: `sbatch` options, a first line, srun `command`,
// and a requeue of the job when trainrun exits 138 (pre-empted, checkpoint saved).
std::string requeueing_job(const std::string& sbatch, const std::string& out, const std::string& first,
                           const std::string& command) {
  return "#!/bin/bash\n#SBATCH --job-name=trainrun-test-" + std::to_string(::getpid()) + "\n#SBATCH " + sbatch +
         "\n#SBATCH --requeue --open-mode=append --output=" + out + "\n" + first + "\nsrun " + command +
         "\nrc=$?\necho \"trainrun exited with $rc\"\nif [ $rc -eq 138 ]; then scontrol requeue $SLURM_JOB_ID; fi\n"
         "exit $rc\n";
}

// One field of `scontrol -o show job ID` ("" when absent).
std::string job_field(const std::string& job, const std::string& key, const SlurmCluster& cluster) {
  std::string line = test::run(cluster.env() + "scontrol -o show job " + job).out;
  std::smatch m;
  return std::regex_search(line, m, std::regex("(^| )" + key + "=(\\S*)")) ? m[2].str() : "";
}

bool wait_for(const std::function<bool()>& done, int seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

// `srun -N1 -n2 trainrun`: two tasks, each a worker that reads SLURM_PROCID/SLURM_NTASKS/...;
// world.nproc_per_node=1 loses to srun's -n2, MASTER_ADDR is the first host of SLURM_NODELIST.
TEST_F(Slurm, SrunTrainsAsTwoTasksAndCountsEveryEvalExampleOnce) {
  auto r = test::run(cluster_->env() + "MASTER_PORT=" + std::to_string(test::free_port()) + " srun -N1 -n2 " +
                     test::trainrun(recipe + " data.max_train_samples=512 data.max_eval_samples=201 "
                                    "world.nproc_per_node=1 output.dir=" + (dir / "run")) + " </dev/null");
  ASSERT_EQ(r.code, 0) << r.out << r.err << cluster_->logs();
  EXPECT_NE(r.out.find("World = 1 node x 2 processes (gloo backend, launched by slurm)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total train batch size (w. parallel, distributed & accumulation) = 128"), std::string::npos)
      << r.out;
  nlohmann::json eval;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (l.contains("eval_examples")) eval = l;
  EXPECT_EQ(eval["eval_examples"], 201) << eval;  // unpadded shards: 101 + 100
  EXPECT_EQ(eval["step"], 4) << eval;             // 512 / (2 x 64)
  EXPECT_TRUE(fs::exists(dir / "run/model.safetensors"));
}

// Pre-emption the sbatch way: SIGUSR1 reaches every task (what `--signal=USR1@90` does 90 s
// before the time limit; here `scancel --signal=USR1` once a loss was logged), every rank saves a
// checkpoint at the next step and exits 138, the batch script requeues the job, and the requeued
// job's identical command resumes from that checkpoint and finishes with the weights of an
// uninterrupted run.
TEST_F(Slurm, SbatchPreemptedBySigusr1RequeuesAndResumesBitExact) {
  std::string overrides = recipe + " data.max_train_samples=3840 data.max_eval_samples=200 train.log_every_steps=5 "
                          "world.nproc_per_node=1 ";
  test::write_file(dir / "job.sh",
                   requeueing_job("--nodes=1 --ntasks=2 --time=10 --signal=USR1@90", dir / "job.out",
                                  "echo \"job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0}\"",
                                  test::trainrun(overrides + "output.dir=" + (dir / "run"))));
  auto sub = test::run(cluster_->env() + "MASTER_PORT=" + std::to_string(test::free_port()) +
                       " sbatch --parsable --chdir=" + dir.path().string() + " " + (dir / "job.sh"));
  ASSERT_EQ(sub.code, 0) << sub.out << sub.err << cluster_->logs();
  std::string job = sub.out.substr(0, sub.out.find_first_not_of("0123456789"));
  ASSERT_FALSE(job.empty()) << sub.out;

  auto out = [&] { return test::read_file(dir / "job.out"); };
  ASSERT_TRUE(wait_for([&] { return out().find("{'loss'") != std::string::npos; }, 120))
      << out() << cluster_->logs();
  auto sig = test::run(cluster_->env() + "scancel --signal=USR1 " + job);
  ASSERT_EQ(sig.code, 0) << sig.err;

  std::string state;
  static const std::regex done("COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|BOOT_FAIL|OUT_OF_MEMORY|DEADLINE");
  wait_for([&] { return std::regex_match(state = job_field(job, "JobState", *cluster_), done); }, 150);
  std::string log = out();
  ASSERT_EQ(state, "COMPLETED") << log << cluster_->logs();
  EXPECT_EQ(job_field(job, "Restarts", *cluster_), "1");
  EXPECT_EQ(job_field(job, "ExitCode", *cluster_), "0:0");

  // The first run: pre-empted after step N, checkpoint saved, 138; the requeued one resumed from it.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(interrupted \(User defined signal 1\) at step (\d+); checkpoint saved)")))
      << log;
  std::string step = m[1].str();
  EXPECT_GE(std::stoi(step), 5);
  EXPECT_LT(std::stoi(step), 30);  // 3840 / (2 x 64) steps in all
  auto first_end = log.find("trainrun exited with 138"), restart = log.find("job " + job + " restart 1"),
       resumed = log.find("Resuming from " + (dir / "run/checkpoint-") + step + "\n"),
       second_end = log.find("trainrun exited with 0");
  EXPECT_NE(log.find("job " + job + " restart 0"), std::string::npos) << log;
  EXPECT_NE(first_end, std::string::npos) << log;
  EXPECT_NE(restart, std::string::npos) << log;
  EXPECT_NE(resumed, std::string::npos) << log;
  EXPECT_NE(second_end, std::string::npos) << log;
  EXPECT_TRUE(first_end < restart && restart < resumed && resumed < second_end) << log;
  EXPECT_TRUE(fs::exists(dir / ("run/checkpoint-" + step)));
  auto metrics = test::read_jsonl(dir / "run/metrics.jsonl");
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics.back()["step"], 30) << metrics.back();

  // The same command without the interruption: the same weights, bit for bit.
  auto ref = test::run(cluster_->env() + "MASTER_PORT=" + std::to_string(test::free_port()) + " srun -N1 -n2 " +
                       test::trainrun(overrides + "output.dir=" + (dir / "ref")) + " </dev/null");
  ASSERT_EQ(ref.code, 0) << ref.out << ref.err;
  TensorList a = load_safetensors(dir / "run/model.safetensors"), b = load_safetensors(dir / "ref/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second))
        << a[i].first << " differs by " << (a[i].second - b[i].second).abs().max().item<double>();
  }
}

// A job requeued on fewer nodes: `--nodes=2` on a two-node cluster (slurmctld and a slurmd in each
// of two network namespaces, slurm_cluster.sh's TWO_NODES), pre-empted by SIGUSR1 while on both
// (every rank checkpoints, exit 138, the batch script requeues); while it waits to start again
// node B is drained and the job's size lowered to what is left (`scontrol update NumNodes=1
// NumTasks=1 NumCPUs=1`: a job given a range, --nodes=1-2, starts on the smallest from the first),
// so it comes back on node A alone: one task, which resumes from the pre-emption's checkpoint
// with data.global_batch_size's 128 examples a step (2 micro-batches of 64 instead of 1 on each of
// 2 tasks). It ends with the losses and weights, to the bit, of the same change made by hand at
// the same step (srun on both nodes stopped there, then srun on node A).
TEST(SlurmNodes, RequeuedOnFewerNodesGoesOnWithTheSameSamples) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (!slurm_installed()) GTEST_SKIP() << "slurm-wlm and munge are not installed (scripts/setup.sh --test)";
  if (::geteuid() != 0) GTEST_SKIP() << "the test cluster's slurmd runs as root";
  test::TwoNodes nodes;
  if (!nodes.ok()) GTEST_SKIP() << "cannot create network namespaces here (needs root and iproute2): " << nodes.why();
  SlurmCluster cluster(&nodes);
  ASSERT_TRUE(cluster.ok()) << cluster.start_output();
  test::TempDir dir;
  const std::string overrides = test::source("recipes/quickstart.yaml") +
                                " data.max_train_samples=3840 data.max_eval_samples=200 train.log_every_steps=5"
                                " data.global_batch_size=128 model.dropout1=0 model.dropout2=0 world.nproc_per_node=1"
                                " world.threads_per_proc=1 ";
  test::write_file(dir / "job.sh", requeueing_job("--nodes=2 --time=10", dir / "job.out",
                                                  "echo \"restart ${SLURM_RESTART_COUNT:-0} on $SLURM_JOB_NODELIST\"",
                                                  test::trainrun(overrides + "output.dir=" + (dir / "run"))));
  const std::string port = "MASTER_PORT=" + std::to_string(test::free_port());
  // Held until both nodes answer, so that the first run gets both (a range gets what is free).
  auto sub = test::run(cluster.env(port) + "sbatch --hold --parsable --chdir=" + dir.path().string() + " " +
                       (dir / "job.sh"));
  ASSERT_EQ(sub.code, 0) << sub.out << sub.err << cluster.logs();
  const std::string job = sub.out.substr(0, sub.out.find_first_not_of("0123456789"));
  ASSERT_TRUE(wait_for([&] { return test::run(cluster.env() + "sinfo -h -N -o %T").out == "idle\nidle\n"; }, 30));
  ASSERT_EQ(test::run(cluster.env() + "scontrol release " + job).code, 0);
  auto out = [&] { return test::read_file(dir / "job.out"); };
  ASSERT_TRUE(wait_for([&] { return out().find("{'loss'") != std::string::npos; }, 120)) << out() << cluster.logs();
  EXPECT_NE(out().find("World = 2 nodes x 1 process ("), std::string::npos) << out();
  ASSERT_EQ(test::run(cluster.env() + "scancel --signal=USR1 " + job).code, 0);
  ASSERT_TRUE(wait_for([&] { return job_field(job, "Restarts", cluster) == "1"; }, 60)) << out() << cluster.logs();
  // Node B gone while the job waits to start again.
  auto drain = test::run(cluster.env() + "scontrol update NodeName=" + nodes.host(1) + " State=DRAIN Reason=gone");
  ASSERT_EQ(drain.code, 0) << drain.err;
  auto shrink = test::run(cluster.env() + "scontrol update JobId=" + job + " NumNodes=1 NumTasks=1 NumCPUs=1");
  ASSERT_EQ(shrink.code, 0) << shrink.err;
  std::string state;
  static const std::regex done("COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|BOOT_FAIL|OUT_OF_MEMORY|DEADLINE");
  wait_for([&] { return std::regex_match(state = job_field(job, "JobState", cluster), done); }, 60);
  const std::string log = out();
  ASSERT_EQ(state, "COMPLETED") << test::run(cluster.env() + "scontrol -o show job " + job).out << log << cluster.logs();
  EXPECT_NE(log.find("restart 1 on " + nodes.host(0) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("World = 1 node x 1 process ("), std::string::npos) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(interrupted \(User defined signal 1\) at step (\d+); checkpoint saved)")))
      << log;
  const std::string step = m[1].str();
  EXPECT_NE(log.find("checkpoint-" + step + " was saved by 2 process(es), this run has 1"), std::string::npos) << log;

  ASSERT_EQ(test::run(cluster.env() + "scontrol update NodeName=" + nodes.host(1) + " State=RESUME").code, 0);
  auto by_hand = [&](const std::string& nodes_flag, const std::string& stop) {
    return test::run(cluster.env("MASTER_PORT=" + std::to_string(test::free_port()) +
                                 (stop.empty() ? "" : " TRAINRUN_INTERRUPT_AT_STEP=" + stop)) +
                     "srun " + nodes_flag + " --ntasks-per-node=1 " +
                     test::trainrun(overrides + "output.dir=" + (dir / "ref")) + " </dev/null");
  };
  auto first = by_hand("-N2", step);
  EXPECT_NE(first.out.find("World = 2 nodes x 1 process ("), std::string::npos) << first.out << first.err;
  auto rest = by_hand("-N1 -w " + nodes.host(0), "");
  ASSERT_EQ(rest.code, 0) << rest.out << rest.err;
  for (const char* key : {"loss", "train_loss"})
    EXPECT_EQ(test::by_step(dir / "run/metrics.jsonl", key), test::by_step(dir / "ref/metrics.jsonl", key)) << key;
  EXPECT_TRUE(test::read_file(dir / "run/model.safetensors") == test::read_file(dir / "ref/model.safetensors"))
      << "final weights differ";
}

}  // namespace
}  // namespace trainrun
