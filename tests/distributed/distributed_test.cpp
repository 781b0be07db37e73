// Real processes over gloo on 127.0.0.1 with ports chosen free at run time.
#include "support/safetensors.h"

#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <regex>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

// A ThreadSanitizer build: GCC says so with __SANITIZE_THREAD__, clang with __has_feature, which
// GCC before 14 does not know (so it cannot appear in the same #if).
#if defined(__SANITIZE_THREAD__)
#define TRAINRUN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRAINRUN_TSAN 1
#endif
#endif

namespace trainrun {
namespace {

using nlohmann::json;

class Distributed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
  std::string recipe = test::source("recipes/quickstart.yaml");
};

// Two processes started by hand with torchrun's variables; the worker checks DDP's promises.
TEST_F(Distributed, TorchrunStyleEnvironmentAndDdpInvariants) {
  std::string env = "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(test::free_port());
  auto r = test::run("bash -c '" + env + " RANK=1 LOCAL_RANK=1 " + DDP_WORKER_BINARY + " & p=$!; " + env +
                     " RANK=0 LOCAL_RANK=0 " + DDP_WORKER_BINARY + "; a=$?; wait $p; b=$?; exit $((a + b))'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("ddp_worker ok: world 2"), std::string::npos) << r.out << r.err;

  // The trainrun binary itself as a torchrun worker.
  env = "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(test::free_port());
  std::string args = recipe + " data.max_train_samples=256 data.max_eval_samples=100 output.dir=" + (dir / "tr");
  r = test::run("bash -c '" + env + " RANK=1 LOCAL_RANK=1 " + TRAINRUN_BINARY + " " + args + " & p=$!; " + env +
                " RANK=0 LOCAL_RANK=0 " + TRAINRUN_BINARY + " " + args + "; a=$?; wait $p; b=$?; exit $((a + b))'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 node x 2 processes (gloo backend, launched by torchrun)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total train batch size (w. parallel, distributed & accumulation) = 128"), std::string::npos);
}

// examples/custom_loop: a hand-written loop over the public API, as 2 torchrun-style processes.
TEST_F(Distributed, CustomLoopExampleTrainsAndGathersEveryTestExample) {
  std::string env = "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(test::free_port());
  std::string cmd = std::string(CUSTOM_LOOP_BINARY) + " " + test::kFashionMnist + " 2000";
  auto r = test::run("bash -c '" + env + " RANK=1 LOCAL_RANK=1 " + cmd + " & p=$!; " + env + " RANK=0 LOCAL_RANK=0 " +
                     cmd + "; a=$?; wait $p; b=$?; exit $((a + b))'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto at = r.out.find("test examples 10000 accuracy ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(std::stod(r.out.substr(at + 29)), 0.5) << r.out;
  EXPECT_NE(r.out.find("(world size 2)"), std::string::npos);
}

// N steps with 2 ranks x batch 32 give the parameters of 1 rank x batch 64 (no dropout, no BN).
TEST_F(Distributed, TwoRanksEqualOneRankWithTheCombinedBatch) {
  std::string common = recipe + " model.dropout1=0 model.dropout2=0 'optimizer={name: sgd, lr: 0.05, momentum: 0.9}' "
                       "data.max_train_samples=640 data.workers=0 train.eval_every=never world.master_port=0 ";
  auto two = test::run(test::trainrun(common + "world.nproc_per_node=2 data.batch_size=32 output.dir=" + (dir / "two")));
  ASSERT_EQ(two.code, 0) << two.err;
  auto one = test::run(test::trainrun(common + "world.nproc_per_node=1 data.batch_size=64 output.dir=" + (dir / "one")));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(two.out.find("Total optimization steps = 10"), std::string::npos) << two.out;
  TensorList a = load_safetensors(dir / "two/model.safetensors"), b = load_safetensors(dir / "one/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  at::Tensor init = load_safetensors(dir / "one/model.safetensors")[0].second;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double diff = (a[i].second - b[i].second).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5) << a[i].first;
  }
}

// Workers forked from the launcher (the default with a CPU-only LibTorch) train bit for bit as
// workers started afresh (TRAINRUN_WORKER_START=exec), and really are forks: a forked worker's
// initial environment (/proc/PID/environ) is the launcher's, without RANK; an exec'd one has it.
TEST_F(Distributed, ForkedWorkersTrainAsExecutedOnes) {
#if defined(TRAINRUN_TSAN)
  // ThreadSanitizer's runtime runs a thread of its own in every process, so the launcher always
  // starts its workers afresh there (as the banner says); the fork is checked by every other build.
  GTEST_SKIP() << "a ThreadSanitizer build never forks its workers (its runtime runs a thread)";
#endif
  std::string common = recipe + " world.nproc_per_node=2 world.master_port=0 data.max_train_samples=640 "
                       "data.max_eval_samples=200 train.log_every_steps=5 output.dir=";
  auto probe = [&](const std::string& run) {  // RANK in a worker's initial environment, after the first loss line
    return "for i in $(seq 600); do grep -q loss " + (dir / (run + ".out")) + " && break; sleep 0.1; done; "
           "for p in $(pgrep -P $L); do grep -q trainrun-rank /proc/$p/comm && "
           "{ tr \"\\0\" \"\\n\" </proc/$p/environ | grep -c ^RANK= ; }; done; wait $L; echo rc=$?";
  };
  auto forked = test::run("bash -c '" + test::trainrun(common + (dir / "fork")) + " >" + (dir / "fork.out") +
                          " 2>&1 & L=$!; " + probe("fork") + "'");
  auto execd = test::run("bash -c 'TRAINRUN_WORKER_START=exec " + test::trainrun(common + (dir / "exec")) + " >" +
                         (dir / "exec.out") + " 2>&1 & L=$!; " + probe("exec") + "'");
  // The banner says how the workers started (and why not forked: the launcher ran other threads).
  EXPECT_NE(test::read_file(dir / "fork.out").find("launched by trainrun, forked from the launcher)"), std::string::npos)
      << test::read_file(dir / "fork.out");
  EXPECT_NE(test::read_file(dir / "exec.out").find("launched by trainrun, started afresh)"), std::string::npos);
  EXPECT_NE(forked.out.find("0\n0\nrc=0"), std::string::npos) << forked.out << test::read_file(dir / "fork.out");
  EXPECT_NE(execd.out.find("1\n1\nrc=0"), std::string::npos) << execd.out << test::read_file(dir / "exec.out");
  TensorList a = load_safetensors(dir / "fork/model.safetensors"), b = load_safetensors(dir / "exec/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;
  auto metrics = [&](const std::string& run) {
    std::vector<json> lines;
    for (auto l : test::read_jsonl(dir / (run + "/metrics.jsonl"))) {
      for (auto k : {"eval_runtime", "eval_samples_per_second", "samples_per_second", "step_time_s", "data_wait_s",
                     "elapsed_s", "train_runtime", "train_samples_per_second", "train_steps_per_second"})
        l.erase(k);
      lines.push_back(l);
    }
    return json(lines).dump();
  };
  EXPECT_EQ(metrics("fork"), metrics("exec"));
}

// A bad number from a launcher is a bad input: one line naming the variable, exit 2, no run folder.
TEST_F(Distributed, BadLauncherNumbersExit2NamingTheVariable) {
  const std::string args = recipe + " output.dir=" + (dir / "run");
  for (auto [vars, line] : std::vector<std::pair<std::string, std::string>>{
           {"RANK=x WORLD_SIZE=2", "RANK=x: expected a whole number >= 0"},
           {"RANK=1 WORLD_SIZE=2.5", "WORLD_SIZE=2.5: expected a whole number >= 0"},
           {"RANK=-1 WORLD_SIZE=2", "RANK=-1: expected a whole number >= 0"},
           {"RANK=2 WORLD_SIZE=2", "rank 2 is outside a world of 2 (check RANK / WORLD_SIZE)"},
           {"RANK=0 WORLD_SIZE=2 MASTER_PORT=http", "MASTER_PORT=http: expected a whole number >= 0"},
           // Found by fuzz/launcher_env_fuzz.cpp (fuzz/regressions/launcher_env/): accepted before.
           {"RANK=0 WORLD_SIZE=2 MASTER_PORT=70000", "MASTER_PORT=70000: not a port number (0 to 65535)"},
           {"RANK=1 WORLD_SIZE=4 LOCAL_RANK=2 LOCAL_WORLD_SIZE=1",
            "local rank 2 is outside this node's 1 process(es) (check LOCAL_RANK / LOCAL_WORLD_SIZE)"},
           {"RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=5", "node 5 is outside the world's 2 node(s) (check GROUP_RANK / NNODES)"},
           {"RANK=0 WORLD_SIZE=9223372036854775807", "WORLD_SIZE=9223372036854775807: too large (at most 2147483647)"},
           {"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=3",
            "local rank 3 is outside this node's 1 process(es) (check OMPI_COMM_WORLD_LOCAL_RANK / "
            "OMPI_COMM_WORLD_LOCAL_SIZE)"}}) {
    auto r = test::run(vars + " " + test::trainrun(args));
    EXPECT_EQ(r.code, 2) << vars << "\n" << r.err;
    EXPECT_NE(r.err.find(line), std::string::npos) << vars << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "run")) << vars;
  }
}

// Eval over 2 ranks on an odd number of examples counts each once, and agrees with 1 process.
TEST_F(Distributed, EvalCountsEveryExampleOnce) {
  auto r = test::run(test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 data.max_train_samples=320 "
                                    "data.max_eval_samples=1001 data.eval_batch_size=100 "
                                    "train.metrics=[accuracy,f1_macro,balanced_accuracy] output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  json eval;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (l.contains("eval_examples")) eval = l;
  EXPECT_EQ(eval["eval_examples"], 1001);
  auto single = test::run(test::trainrun("eval " + recipe + " data.max_eval_samples=1001 --checkpoint " + (dir / "run")));
  ASSERT_EQ(single.code, 0) << single.err;
  std::ostringstream acc;
  acc << "'eval_accuracy': " << std::setprecision(17) << eval["eval_accuracy"].get<double>();
  EXPECT_NE(single.out.find(acc.str().substr(0, 22)), std::string::npos) << single.out << " vs " << acc.str();
  // The confusion matrix is summed over the ranks: the same F1 and balanced accuracy as one process.
  const auto report = json::parse(test::read_file(dir / "run/eval_report.json"));
  for (const char* m : {"eval_f1_macro", "eval_balanced_accuracy"}) EXPECT_NEAR(report[m].get<double>(), eval[m].get<double>(), 1e-12) << m;
}

TEST_F(Distributed, KilledRankEndsTheRunNamingIt) {
  std::string cmd = test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 train.log_every_steps=5 "
                                   "world.timeout_s=30 output.dir=" + (dir / "run"));
  // Start, wait for the first log line, SIGKILL rank 1, time how long the launcher takes to end.
  auto r = test::run(test::kill_rank_after_first_log(cmd, dir.path().string(), 1));
  std::string err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=1 "), std::string::npos) << r.out << err;
  int secs = std::stoi(r.out.substr(r.out.find("secs=") + 5));
  EXPECT_LT(secs, 90);
  EXPECT_NE(err.find("trainrun: rank 1 was killed by signal 9"), std::string::npos) << err;
}

TEST_F(Distributed, MaxRestartsRelaunchesTheWorld) {
  std::string cmd = test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 world.max_restarts=1 "
                                   "data.max_train_samples=3200 train.log_every_steps=5 output.dir=" + (dir / "run"));
  auto r = test::run(test::kill_rank_after_first_log(cmd, dir.path().string(), 1));
  std::string err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << err;
  EXPECT_NE(err.find("restarting the world (restart 1 of 1)"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::exists(dir / "run/model.safetensors"));
}

TEST_F(Distributed, SigintOnTheLauncherReachesEveryRank) {
  std::string cmd = test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 train.log_every_steps=5 "
                                   "output.dir=" + (dir / "run"));
  auto r = test::run("bash -c '" + cmd + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!; " +
                     "for i in $(seq 600); do grep -q loss " + (dir / "out") + " && break; sleep 0.1; done; " +
                     "W=$(pgrep -P $L); kill -INT $L; wait $L; echo rc=$?; sleep 0.5; " +
                     "for p in $W; do kill -0 $p 2>/dev/null && echo left-behind; done; echo workers=$W'");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out << test::read_file(dir / "err");
  EXPECT_EQ(r.out.find("left-behind"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ' '), 1) << r.out;  // "workers=A B": two workers were running
}

// SIGUSR1 (a scheduler's pre-emption warning, e.g. sbatch --signal=USR1@90): every rank saves a
// checkpoint after the same step and the launcher exits 138, which a requeued job resumes from.
TEST_F(Distributed, Sigusr1PreemptsWithACheckpointAndExit138) {
  std::string cmd = test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 train.log_every_steps=5 "
                                   "data.max_train_samples=6400 output.dir=" + (dir / "run"));
  auto r = test::run("bash -c '" + cmd + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!; " +
                     "for i in $(seq 600); do grep -q loss " + (dir / "out") + " && break; sleep 0.1; done; " +
                     "kill -USR1 $L; wait $L; echo rc=$?'");
  std::string err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=138"), std::string::npos) << r.out << err;
  auto at = err.find("rank 0: interrupted (User defined signal 1) at step ");
  ASSERT_NE(at, std::string::npos) << err;
  std::string step = std::to_string(std::stoi(err.substr(at + 52)));
  EXPECT_NE(err.find("rank 1: interrupted (User defined signal 1) at step " + step + "; checkpoint saved"),
            std::string::npos) << err;
  EXPECT_NE(err.find("trainrun: pre-empted (SIGUSR1)"), std::string::npos) << err;
  auto again = test::run(cmd);  // the requeued job
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("Resuming from " + (dir / "run/checkpoint-") + step), std::string::npos) << again.out;
}

TEST_F(Distributed, FileStoreRendezvous) {
  auto r = test::run(test::trainrun(recipe + " world.nproc_per_node=2 world.init_method=file://" + (dir / "store") +
                                    " data.max_train_samples=256 data.max_eval_samples=100 output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "run/model.safetensors"));
  r = test::run(test::trainrun("check " + recipe + " world.init_method=tcp://x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("world.init_method: expected `env` or file:///path, got 'tcp://x'"), std::string::npos) << r.err;
}

// The TCPStore's server: the one Python's torch can make on the same install. Python is asked
// whether this LibTorch has a use_libuv option (1.13 has not: TypeError) and whether a libuv store
// can be made (Debian 13's 2.6 cannot: "built without libuv support"); trainrun's banner must say
// the matching server, USE_LIBUV=0 must give the classic one, and USE_LIBUV=1 must fail as Python
// fails where libuv is missing, with one line saying what to do.
TEST_F(Distributed, RendezvousStoreIsTheServerThisLibTorchHas) {
  if (test::run(std::string(test::kPython) + " -c 'import torch'").code != 0) GTEST_SKIP() << "python3-torch is not installed";
  auto py = test::run(std::string(test::kPython) +
                      " -c 'import torch.distributed as d\ntry:\n  d.TCPStore(\"127.0.0.1\", 0, 1, True, use_libuv=True)\n"
                      "  print(\"libuv\")\nexcept TypeError: print(\"no option\")\nexcept RuntimeError as e: print(e)'");
  const std::string python_says = py.out.substr(0, py.out.find('\n'));
  auto banner = [&](const std::string& env, const std::string& run) {
    auto r = test::run(env + " " + test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=0 world.timeout_s=5 "
                                                  "data.max_train_samples=128 data.max_eval_samples=64 output.dir=" +
                                                  (dir / run)));
    std::smatch m;
    std::string line = std::regex_search(r.out, m, std::regex(R"(Rendezvous = TCPStore 127\.0\.0\.1:\d+ \((.*)\))"))
                           ? m[1].str() : "exit " + std::to_string(r.code) + ": " + r.err;
    return line;
  };
  const std::string unset = banner("env -u USE_LIBUV", "unset"), off = banner("USE_LIBUV=0", "off"),
                    on = banner("USE_LIBUV=1", "on");
  if (python_says == "no option") {  // LibTorch 1.13: one server, USE_LIBUV not read (nor by Python)
    EXPECT_EQ(unset, "classic server, the only one this LibTorch has");
    EXPECT_EQ(off, unset);
    EXPECT_EQ(on, unset);
  } else if (python_says == "libuv") {
    EXPECT_EQ(unset, "libuv server");
    EXPECT_EQ(off, "classic server: USE_LIBUV=0");
    EXPECT_EQ(on, "libuv server");
  } else {
    ASSERT_NE(python_says.find("without libuv support"), std::string::npos) << py.out << py.err;
    EXPECT_EQ(unset, "classic server: this LibTorch was built without libuv");
    EXPECT_EQ(off, "classic server: USE_LIBUV=0");
    EXPECT_NE(on.find("exit 1: "), std::string::npos) << on;
    EXPECT_NE(on.find("rank 0: USE_LIBUV=1 asks for the libuv TCPStore, and this LibTorch was built without libuv (unset "
                      "USE_LIBUV, or set USE_LIBUV=0, for the classic one)"),
              std::string::npos)
        << on;
  }
}

TEST_F(Distributed, BusyPortIsABadInput) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::listen(fd, 1);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  auto r = test::run(test::trainrun(recipe + " world.nproc_per_node=2 world.master_port=" + std::to_string(port) +
                                    " output.dir=" + (dir / "run")));
  ::close(fd);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("world.master_port: port " + std::to_string(port) + " on 127.0.0.1 is not free"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "run"));
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

TEST(DistributedNodes, TwoNodesTimesTwoProcessesOverVeth) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TwoNodes nodes;
  if (!nodes.ok()) GTEST_SKIP() << "cannot create network namespaces here (needs root and iproute2): " << nodes.why();
  test::TempDir dir;
  std::string args = test::source("recipes/quickstart.yaml") +
                     " world.nnodes=2 world.nproc_per_node=2 world.master_addr=10.231.0.1 world.master_port=29500 "
                     "data.max_train_samples=512 data.max_eval_samples=333 output.dir=" + (dir / "run");
  auto r = test::run("bash -c '" + nodes.exec(1) + test::trainrun(args + " world.node_rank=1") + " >" + (dir / "n1") +
                     " 2>&1 & p=$!; " + nodes.exec(0) + test::trainrun(args + " world.node_rank=0") +
                     "; a=$?; wait $p; b=$?; exit $((a + b))'");
  ASSERT_EQ(r.code, 0) << r.err << test::read_file(dir / "n1");
  EXPECT_NE(r.out.find("World = 2 nodes x 2 processes (gloo backend, launched by trainrun, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total train batch size (w. parallel, distributed & accumulation) = 256"), std::string::npos);
  std::string metrics = test::read_file(dir / "run/metrics.jsonl");
  EXPECT_NE(metrics.find("\"eval_examples\":333"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace trainrun
