#include "runner/distributed/launcher.h"

#include "runner/distributed/exit_codes.h"
#include "support/errors.h"


#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

namespace trainrun {

namespace {

// Read by the signal handler, so plain sig_atomic_t values (async-signal-safe): the workers'
// process group (0 while none runs), and what arrived.
volatile sig_atomic_t g_workers = 0;
volatile sig_atomic_t g_interrupted = 0;  // SIGINT / SIGTERM
volatile sig_atomic_t g_preempted = 0;    // SIGUSR1

// The workers have a process group of their own, so a terminal's Ctrl-C reaches them once,
// from here, rather than twice (from the terminal and again from us).
void forward_signal(int sig) {
  if (sig == SIGUSR1) g_preempted = 1;
  else g_interrupted = 1;
  pid_t group = g_workers;
  if (group > 0) ::kill(-group, sig);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

// This process's environment with `overrides` set, as execve wants it.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e, key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (auto& [k, _] : overrides) replaced |= k == key;
    if (!replaced) env.push_back(entry);
  }
  for (auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// OpenBLAS's pthread build (Debian's default libopenblas.so.0 unless the openmp one is selected)
// starts its worker threads when it loads. They are fork-safe: OpenBLAS's own pthread_atfork
// handler is blas_thread_shutdown_, which joins them, and a child starts them again on demand.
// Calling it first lets the thread count below see only threads of our own.
void stop_openblas_threads() {
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) shutdown();
}

// The threads this process runs now (1 = only the caller).
int64_t running_threads() {
  std::error_code ec;
  int64_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

void reset_signals() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  ::sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) ::sigaction(s, &sa, nullptr);
}

// Starts a worker in process group `group` (0: a new group led by the worker). exec: only
// async-signal-safe calls between fork and exec, as the launcher may run threads. Otherwise
// the child returns 0 with `vars` in its environment and goes on as the worker.
pid_t spawn(std::vector<std::string> argv, const std::vector<std::pair<std::string, std::string>>& vars,
            pid_t group, bool exec) {
  std::vector<std::string> env = exec ? environment_with(vars) : std::vector<std::string>{};
  std::vector<char*> args = c_strings(argv), envp = c_strings(env);
  pid_t parent = ::getpid();
  std::fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, group);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a launcher killed with SIGKILL leaves no workers behind
    if (::getppid() != parent) ::_exit(127);
    if (!exec) {
      reset_signals();
      for (auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
      return 0;
    }
    ::execve("/proc/self/exe", args.data(), envp.data());
    const char msg[] = "trainrun: cannot start a worker\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, group ? group : pid);  // also here, so the group exists before we signal it
  return pid;
}

struct Outcome {
  int failed_rank = -1;
  int status = 0;
  bool worker = false;  // this is a forked worker, not the launcher
};

// What a worker of this node is told (torchrun's variables, and how it was started for its banner).
std::vector<std::pair<std::string, std::string>> worker_environment(const WorldConfig& w, int64_t local, int64_t attempt,
                                                                    const std::string& started) {
  return {{"RANK", std::to_string(w.node_rank * w.nproc_per_node + local)},
          {"LOCAL_RANK", std::to_string(local)},
          {"WORLD_SIZE", std::to_string(w.world_size())},
          {"LOCAL_WORLD_SIZE", std::to_string(w.nproc_per_node)},
          {"GROUP_RANK", std::to_string(w.node_rank)},
          {"NNODES", std::to_string(w.nnodes)},
          {"MASTER_ADDR", w.master_addr},
          {"MASTER_PORT", std::to_string(w.master_port)},
          {"TRAINRUN_INIT_METHOD", w.init_method},
          {"TRAINRUN_LAUNCHER", "trainrun"},
          {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)},
          {"TRAINRUN_WORKERS_STARTED", started}};
}

// Starts this node's workers in one process group; their pids in local-rank order, or an empty
// list in a forked worker.
std::vector<pid_t> start_workers(const std::vector<std::string>& argv, const LaunchOptions& o, int64_t attempt) {
  if (o.fork_workers) stop_openblas_threads();
  const int64_t threads = running_threads();
  const bool exec = !o.fork_workers || threads != 1;
  // How the workers started, for their banner: forked, or afresh and why.
  const std::string started = !exec ? "forked from the launcher"
                              : !o.fork_workers ? "started afresh"
                                                : "started afresh: the launcher runs " + std::to_string(threads) + " threads";
  std::vector<pid_t> pids;
  pid_t group = 0;
  for (int64_t local = 0; local < o.world.nproc_per_node; ++local) {
    pids.push_back(spawn(argv, worker_environment(o.world, local, attempt, started), group, exec));
    if (pids.back() == 0) return {};
    if (!group) group = pids.front();
    g_workers = group;
  }
  return pids;
}

// Which of two failures reaped in the same poll names the run's cause: a rank killed by a
// signal over one that exited with an error, as a rank that loses its peer exits 1 within
// milliseconds of the peer's death and the order waitpid hands back two zombies is arbitrary.
bool names_the_cause_before(int status, const Outcome& other) {
  return other.failed_rank < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(other.status));
}

// Waits for every worker; the first that failed (its rank and status). After a failure the
// others get the process-group timeout to notice, then are killed.
Outcome wait_for_workers(std::vector<pid_t> pids, const WorldConfig& w) {
  Outcome out;
  std::size_t alive = pids.size();
  auto failed_at = std::chrono::steady_clock::time_point::max();
  auto grace = std::chrono::seconds(int64_t(w.timeout_s) + 10);
  while (alive > 0) {
    // Every worker that has ended by now, before one is named the cause.
    Outcome round;
    int status = 0;
    for (pid_t pid; alive > 0 && (pid = ::waitpid(-1, &status, WNOHANG)) > 0;)
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] != pid) continue;
        pids[i] = -1;
        --alive;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && names_the_cause_before(status, round))
          round = Outcome{int(w.node_rank * w.nproc_per_node + int64_t(i)), status};
      }
    if (round.failed_rank >= 0 && out.failed_rank < 0) {
      out = round;
      failed_at = std::chrono::steady_clock::now();
    }
    if (alive == 0) break;
    if (std::chrono::steady_clock::now() - failed_at > grace)
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return out;
}

Outcome run_world(const std::vector<std::string>& argv, const LaunchOptions& o, int64_t attempt) {
  std::vector<pid_t> pids = start_workers(argv, o, attempt);
  if (pids.empty()) return Outcome{-1, 0, true};
  // A signal that came while the workers were starting reaches them too.
  if (g_interrupted || g_preempted) ::kill(-pids.front(), g_preempted && !g_interrupted ? SIGUSR1 : SIGINT);
  Outcome out = wait_for_workers(std::move(pids), o.world);
  g_workers = 0;
  return out;
}

}  // namespace

int64_t reserve_master_port(const LaunchOptions& options) {
  const WorldConfig& o = options.world;
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

void name_worker_process(int64_t rank) {
  std::string name = "trainrun-rank" + std::to_string(rank);
  ::prctl(PR_SET_NAME, name.substr(0, 15).c_str());
}


std::optional<int> launch(const std::vector<std::string>& argv, const LaunchOptions& options) {
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) ::sigaction(s, &sa, nullptr);
  for (int64_t attempt = 0;; ++attempt) {
    Outcome out = run_world(argv, options, attempt);
    if (out.worker) return std::nullopt;
    int code = WIFEXITED(out.status) ? WEXITSTATUS(out.status) : -1;
    // A signal here, or one a scheduler sent to every process: the workers stopped together
    // after a checkpoint (130 interrupted, 138 pre-empted); no failure to restart from.
    if (g_interrupted || (out.failed_rank >= 0 && code == kExitInterrupted)) {
      std::fprintf(stderr, "trainrun: interrupted; workers stopped\n");
      return kExitInterrupted;
    }
    if (g_preempted || (out.failed_rank >= 0 && code == kExitPreempted)) {
      std::fprintf(stderr, "trainrun: pre-empted (SIGUSR1); workers stopped after a checkpoint, exit 138 "
                   "(requeue the job to resume)\n");
      return kExitPreempted;
    }
    if (out.failed_rank < 0) return kExitOk;
    std::fprintf(stderr, "trainrun: rank %d %s\n", out.failed_rank, describe_status(out.status).c_str());
    // A bad recipe fails the same way every time: no restart.
    if (code == kExitBadInput) return kExitBadInput;
    if (attempt >= options.world.max_restarts) return kExitFailed;
    std::fprintf(stderr, "trainrun: restarting the world (restart %lld of %lld); with output.resume: auto it "
                 "continues from the newest checkpoint\n", (long long)(attempt + 1), (long long)options.world.max_restarts);
  }
}

}  // namespace trainrun
