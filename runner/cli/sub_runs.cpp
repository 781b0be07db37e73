#include "runner/cli/sub_runs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace trainrun::cli {
namespace {

// Read by the handler: the children's process groups (0 = a free slot) and what arrived.
constexpr int kSlots = 256;
volatile sig_atomic_t g_groups[kSlots] = {};
volatile sig_atomic_t g_stop = 0;
struct sigaction g_previous[3];
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGUSR1};

void forward(int sig) {
  g_stop = sig;
  for (int i = 0; i < kSlots; ++i)
    if (g_groups[i] > 0) ::kill(-pid_t(g_groups[i]), sig);
}

}  // namespace

SubRuns::SubRuns() {
  struct sigaction sa {};
  sa.sa_handler = forward;
  ::sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
}

SubRuns::~SubRuns() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

bool SubRuns::stopping() const { return g_stop != 0; }

pid_t SubRuns::start(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a run: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int s : kSignals) ::sigaction(s, &sa, nullptr);
    if (!log.empty()) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2), ::close(fd);
    }
    ::execv("/proc/self/exe", c_argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  for (int i = 0; i < kSlots; ++i)
    if (g_groups[i] == 0) {
      g_groups[i] = pid;
      break;
    }
  ++running_;
  if (g_stop) ::kill(-pid, g_stop);  // a signal that came while it started
  return pid;
}

SubRuns::Ended SubRuns::wait_one() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, 0)) < 0 && errno == EINTR) {
  }
  if (pid < 0) throw std::runtime_error(std::string("waiting for a run: ") + std::strerror(errno));
  for (int i = 0; i < kSlots; ++i)
    if (g_groups[i] == pid) g_groups[i] = 0;
  --running_;
  return {pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

}  // namespace trainrun::cli
