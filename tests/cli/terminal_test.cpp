// trainrun in a real terminal (tmux): Ctrl-C reaches the foreground process group, i.e. the
// launcher (its workers have a process group of their own and hear it once, from the launcher).
#include "test_util.h"

#include <regex>
#include <thread>

namespace trainrun {
namespace {

bool wait_for(const std::function<bool()>& ready, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(Terminal, CtrlCStopsEveryRankAfterTheSameStepWithACheckpoint) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (test::run("tmux -V").code != 0) GTEST_SKIP() << "tmux is not installed";
  test::TempDir dir;
  const std::string tmux = "tmux -L trainrun-test-" + std::to_string(::getpid()) + " ";
  // stdout stays on the terminal (progress bar and all); stderr and the exit code go to files
  // (bash, unlike dash, goes on after a child that handled the SIGINT both received).
  test::write_file(dir / "run.sh", test::trainrun(test::source("recipes/quickstart.yaml") +
                                                   " world.nproc_per_node=2 world.master_port=0 train.log_every_steps=5 "
                                                   "output.dir=" + (dir / "run")) +
                                       " 2>" + (dir / "err") + "; echo $? >" + (dir / "rc") + "\n");
  ASSERT_EQ(test::run(tmux + "new-session -d -x 160 -y 40 'bash " + (dir / "run.sh") + "'").code, 0);
  bool logging = wait_for([&] { return test::read_file(dir / "run/train.log").find("'loss'") != std::string::npos; }, 120);
  test::run(tmux + "send-keys C-c");
  bool ended = wait_for([&] { return !test::read_file(dir / "rc").empty(); }, 120);
  std::string screen = test::run(tmux + "capture-pane -p").out;
  test::run(tmux + "kill-server");
  ASSERT_TRUE(logging) << test::read_file(dir / "err");
  ASSERT_TRUE(ended) << screen << test::read_file(dir / "err");

  std::string err = test::read_file(dir / "err");
  EXPECT_EQ(std::stoi(test::read_file(dir / "rc")), 130) << err << screen;
  EXPECT_NE(err.find("trainrun: interrupted; workers stopped"), std::string::npos) << err;
  std::smatch m0, m1;
  std::regex rank0("rank 0: interrupted \\(Interrupt\\) at step (\\d+); checkpoint saved");
  std::regex rank1("rank 1: interrupted \\(Interrupt\\) at step (\\d+); checkpoint saved");
  ASSERT_TRUE(std::regex_search(err, m0, rank0)) << err;
  ASSERT_TRUE(std::regex_search(err, m1, rank1)) << err;
  EXPECT_EQ(m0[1].str(), m1[1].str()) << err;
  EXPECT_TRUE(std::filesystem::exists(dir / ("run/checkpoint-" + m0[1].str() + "/trainer_state.json"))) << err;
}

}  // namespace
}  // namespace trainrun
