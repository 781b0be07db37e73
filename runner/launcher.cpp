#include "runner/launcher.h"

#include "runner/recipe.h"


#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace trainrun {

namespace {

volatile sig_atomic_t g_signal = 0;
std::vector<pid_t> g_children;  // read by the signal handler

void forward_signal(int sig) {
  g_signal = sig;
  for (pid_t p : g_children)
    if (p > 0) ::kill(p, sig);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid > 0) return pid;
  for (auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv("/proc/self/exe", args.data());
  std::fprintf(stderr, "trainrun: cannot start a worker: %s\n", std::strerror(errno));
  ::_exit(127);
}

struct Outcome {
  int failed_rank = -1;
  int status = 0;
};

Outcome run_world(const std::vector<std::string>& argv, const LaunchOptions& o, int64_t attempt) {
  int64_t world = o.nproc_per_node * o.nnodes;
  std::vector<pid_t> pids;
  for (int64_t local = 0; local < o.nproc_per_node; ++local) {
    int64_t rank = o.node_rank * o.nproc_per_node + local;
    pids.push_back(spawn(argv, {{"RANK", std::to_string(rank)},
                                {"LOCAL_RANK", std::to_string(local)},
                                {"WORLD_SIZE", std::to_string(world)},
                                {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
                                {"GROUP_RANK", std::to_string(o.node_rank)},
                                {"NNODES", std::to_string(o.nnodes)},
                                {"MASTER_ADDR", o.master_addr},
                                {"MASTER_PORT", std::to_string(o.master_port)},
                                {"TRAINRUN_INIT_METHOD", o.init_method},
                                {"TRAINRUN_LAUNCHER", "trainrun"},
                                {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)}}));
  }
  g_children = pids;
  Outcome out;
  std::size_t alive = pids.size();
  auto failed_at = std::chrono::steady_clock::time_point::max();
  // After a failure the others get the process-group timeout to notice, then are killed.
  auto grace = std::chrono::seconds(o.timeout_s + 10);
  while (alive > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      if (std::chrono::steady_clock::now() - failed_at > grace)
        for (pid_t p : pids)
          if (p > 0) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (pids[i] != pid) continue;
      pids[i] = -1;
      g_children[i] = -1;
      --alive;
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && out.failed_rank < 0) {
        out.failed_rank = int(o.node_rank * o.nproc_per_node + int64_t(i));
        out.status = status;
        failed_at = std::chrono::steady_clock::now();
      }
    }
  }
  g_children.clear();
  return out;
}

}  // namespace

int64_t reserve_master_port(const LaunchOptions& o) {
  if (o.node_rank != 0 || o.init_method != "env") return o.master_port;
  if (o.master_port == 0 && o.nnodes > 1)
    throw RecipeError("world.master_port: 0 (a free port) only works on one node; other nodes must know the port");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(o.master_port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    throw RecipeError("world.master_port: port " + std::to_string(o.master_port) + " on " + o.master_addr +
                      " is not free (" + std::strerror(err) + "); pick another, or 0 for any free port");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

int launch(const std::vector<std::string>& argv, const LaunchOptions& options) {
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  for (int64_t attempt = 0;; ++attempt) {
    Outcome out = run_world(argv, options, attempt);
    if (g_signal) {
      std::fprintf(stderr, "trainrun: interrupted (%s); workers stopped\n", strsignal(g_signal));
      return 130;
    }
    if (out.failed_rank < 0) return 0;
    // Workers that got SIGINT/SIGTERM themselves (a scheduler signals every process) stop
    // together after a checkpoint and exit 130; that is no failure to restart from.
    if (WIFEXITED(out.status) && WEXITSTATUS(out.status) == 130) {
      std::fprintf(stderr, "trainrun: rank %d was interrupted; workers stopped\n", out.failed_rank);
      return 130;
    }
    std::fprintf(stderr, "trainrun: rank %d %s\n", out.failed_rank, describe_status(out.status).c_str());
    if (attempt >= options.max_restarts) return 1;
    std::fprintf(stderr, "trainrun: restarting the world (restart %lld of %lld); with output.resume: auto it "
                 "continues from the newest checkpoint\n", (long long)(attempt + 1), (long long)options.max_restarts);
  }
}

}  // namespace trainrun
