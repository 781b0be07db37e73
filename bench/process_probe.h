// bench/shard_input's processes: what it measures of its own (/proc/self/status fields, CPU time,
// the settled RSS, open file descriptors, the load average, the files any process opens in
// watched folders, by inotify), its phases run as child processes of itself, and the loopback
// HTTP server whose CPU it reads. Linux only, as the bench is.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/inotify.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace trainrun::bench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// The number of a field of /proc/self/status ("VmRSS" in kB, "Threads").
inline double status_field(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  return 0;
}

inline double status_mib(const std::string& field) { return status_field(field) / 1024.0; }

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// CPU time of this process, every thread, user + system.
inline double cpu_ms_used() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

// The least VmRSS over the next 100 ms: a stream's last shard reader (an HTTP stream's 4 MiB
// buffer) may still be being freed on its own thread as the epoch's last batch arrives.
inline double settled_rss_mib() {
  double least = status_mib("VmRSS");
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    least = std::min(least, status_mib("VmRSS"));
  }
  return least;
}

inline int64_t open_fds() {
  int64_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n - 1;  // the iterator's own
}

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// Files opened in the watched folders by any process, from inotify's IN_OPEN events (a folder's
// own opens, its listing, are left out). Read on a thread so the kernel's queue never overflows.
class OpenCounter {
 public:
  explicit OpenCounter(const std::vector<fs::path>& dirs) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::string("inotify_init1: ") + std::strerror(errno));
    for (const auto& d : dirs)
      if (inotify_add_watch(fd_, d.c_str(), IN_OPEN) < 0)
        throw std::runtime_error("inotify_add_watch " + d.string() + ": " + std::strerror(errno));
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, 20);
        drain();
      }
    });
  }
  ~OpenCounter() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  // Files opened since the counter was made (events still queued read first).
  int64_t count() {
    drain();
    std::lock_guard<std::mutex> lock(mu_);
    if (overflowed_) throw std::runtime_error("inotify: the event queue overflowed; the count would be short");
    return files_;
  }

 private:
  void drain() {
    std::lock_guard<std::mutex> lock(mu_);
    alignas(inotify_event) char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return;
      for (char* p = buf; p < buf + n;) {
        auto* e = reinterpret_cast<inotify_event*>(p);
        if (e->mask & IN_Q_OVERFLOW) overflowed_ = true;
        if ((e->mask & IN_OPEN) && !(e->mask & IN_ISDIR) && e->len > 0) ++files_;
        p += sizeof(inotify_event) + e->len;
      }
    }
  }
  int fd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  int64_t files_ = 0;
  bool overflowed_ = false;
};

// The numbers of a child's "result" line (`env`: VAR=VALUE ... for it); exits when the child fails.
inline std::vector<double> run_child(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + fs::read_symlink("/proc/self/exe").string() + " --phase " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string text;
  char chunk[4096];
  while (p && std::fgets(chunk, sizeof chunk, p)) text += chunk;
  std::vector<double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("result ", 0) != 0) {
      std::printf("%s\n", line.c_str());
      continue;
    }
    std::istringstream in(line.substr(7));
    for (double v; in >> v;) out.push_back(v);
  }
  if (!p || ::pclose(p) != 0 || out.empty()) {
    std::fprintf(stderr, "shard_input: the phase failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return out;
}

inline int run_command(const std::string& cmd) {
  std::printf("+ %s\n", cmd.c_str());
  std::fflush(stdout);
  return std::system(cmd.c_str());
}

// /usr/bin/python3 -m http.server on a free loopback port, serving `dir`; stopped by the destructor.
class HttpServer {
 public:
  explicit HttpServer(const fs::path& dir) {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(s);
    const std::string port_text = std::to_string(port);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);  // its log line a request
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl("/usr/bin/python3", "python3", "-m", "http.server", port_text.c_str(), "--bind", "127.0.0.1", "--directory",
              dir.c_str(), (char*)nullptr);
      std::_Exit(127);
    }
    for (int tries = 0; tries < 200; ++tries) {  // up to 10 s for it to listen
      int c = ::socket(AF_INET, SOCK_STREAM, 0);
      a.sin_port = htons(uint16_t(port));
      const bool up = ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(c);
      if (up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("python3 -m http.server did not start listening on 127.0.0.1:" + std::to_string(port));
  }
  // CPU time it has used, user + system (/proc/PID/stat).
  double cpu_ms() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
    std::string f;
    double utime = 0, stime = 0;
    for (int i = 3; fields >> f; ++i) {  // fields 14 and 15 of proc(5)
      if (i == 14) utime = std::stod(f);
      if (i == 15) stime = std::stod(f);
    }
    return (utime + stime) * 1000.0 / double(::sysconf(_SC_CLK_TCK));
  }
  ~HttpServer() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  int port = 0;

 private:
  pid_t pid_ = -1;
};

inline int64_t folder_bytes(const fs::path& dir, const std::string& prefix) {
  int64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().rfind(prefix, 0) == 0) n += int64_t(e.file_size());
  return n;
}

}  // namespace trainrun::bench
