// Which rank the launcher names when a world fails: the rank whose death caused the others' exit.
// A rank that loses its peer exits 1 within milliseconds of the peer's death, and when both have
// ended before the launcher looks, waitpid hands back the older child (rank 0) first. CI
// (2026-11-30) printed "trainrun: rank 0 exited with code 1" for a rank 1 killed with SIGKILL
// once the ranks' own exit had become fast. These workers are forked from this test process by
// launch() itself and replay that order exactly: rank 1 kills itself, rank 0 exits 1 once rank 1
// is a zombie, and the launcher's first look finds both.
#include "test_util.h"

#include "runner/distributed/launcher.h"

#include <csignal>
#include <thread>

namespace trainrun {
namespace {

int threads_here() {
  int n = 0;
  for ([[maybe_unused]] auto& t : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// /proc/PID/stat's state letter ('Z' once the process has ended and waits to be reaped).
char process_state(const std::string& pid) {
  std::string stat = test::read_file("/proc/" + pid + "/stat");
  auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 'X' : stat[close + 2];
}

// What a forked worker does: never returns into the test.
[[noreturn]] void act_as_worker(const std::string& dir) {
  const std::string rank = std::getenv("RANK"), pid_file = dir + "/rank1.pid";
  if (rank == "1") {
    test::write_file(pid_file + ".tmp", std::to_string(::getpid()));
    std::filesystem::rename(pid_file + ".tmp", pid_file);
    ::raise(SIGKILL);
  }
  while (!std::filesystem::exists(pid_file)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string peer = test::read_file(pid_file);
  while (process_state(peer) != 'Z' && process_state(peer) != 'X') std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::_exit(1);  // as a rank does on "lost contact with another rank"
}

TEST(LauncherCause, RankKilledBySignalIsNamedOverThePeerThatExitedOnLosingIt) {
  if (threads_here() != 1) GTEST_SKIP() << "this test process runs threads, so launch() would exec workers";
  test::TempDir dir;
  LaunchOptions options;
  options.world = WorldConfig::defaults();
  options.world.nproc_per_node = 2;
  options.world.timeout_s = 5;
  options.fork_workers = true;
  ::testing::internal::CaptureStderr();
  std::optional<int> code = launch({"trainrun-worker"}, options);
  if (!code) act_as_worker(dir.path().string());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(*code, 1) << err;
  EXPECT_NE(err.find("trainrun: rank 1 was killed by signal 9"), std::string::npos) << err;
  EXPECT_EQ(err.find("rank 0"), std::string::npos) << err;
}

}  // namespace
}  // namespace trainrun
