// Helpers shared by the tests: temp folders, running the trainrun binary, small files.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/logging/logging.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <functional>
#include <sstream>
#include <string>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace trainrun::test {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "trainrun-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

struct RunResult {
  int code = -1;
  std::string out, err;
};

// Runs a shell command line; captures exit code, stdout and stderr.
inline RunResult run(const std::string& command) {
  TempDir tmp;
  std::string cmd = command + " >" + (tmp / "out") + " 2>" + (tmp / "err");
  int status = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(tmp / "out");
  r.err = read_file(tmp / "err");
  return r;
}

inline std::string trainrun(const std::string& args) { return std::string(TRAINRUN_BINARY) + " " + args; }
inline std::string source(const std::string& rel) { return std::string(TRAINRUN_SOURCE_DIR) + "/" + rel; }

// `trainrun eval ARGS` (recipe, overrides, --checkpoint PATH) exits 0 and prints exactly the
// eval_accuracy the training run logged. The run, for further checks.
inline RunResult eval_printing_accuracy(const std::string& args, double accuracy) {
  RunResult r = run(trainrun("eval " + args));
  EXPECT_EQ(r.code, 0) << r.err;
  // As the console prints it (Python's repr: shortest round trip; 4/6 is 0.6666666666666666).
  const std::string dict = python_dict({{"eval_accuracy", accuracy}});
  const std::string expect = dict.substr(1, dict.size() - 2);
  EXPECT_NE(r.out.find(expect), std::string::npos) << r.out << " vs " << expect;
  return r;
}

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";
constexpr const char* kPython = "/usr/bin/python3";

// The message of the `E` that `f` throws, or "(no error)".
template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

// One JSON object per line, as metrics.jsonl.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// step -> the value of `key` on the metrics.jsonl lines that have it.
inline std::map<int64_t, double> by_step(const std::string& metrics, const std::string& key) {
  std::map<int64_t, double> out;
  for (auto& l : read_jsonl(metrics))
    if (l.contains(key)) out[l["step"].get<int64_t>()] = l[key].get<double>();
  return out;
}

// Starts `command` in the background with stdout/stderr in dir/out and dir/err, waits for its
// first logged loss (or the first stdout line containing `after`), SIGKILLs the worker that
// names itself trainrun-rank<rank> (any launcher), and waits for the command.
// Prints "rc=<exit code> secs=<seconds from the kill to the end>".
inline std::string kill_rank_after_first_log(const std::string& command, const std::string& dir, int rank,
                                             const std::string& after = "loss") {
  return "bash -c '" + command + " >" + dir + "/out 2>" + dir + "/err & L=$!; " +
         "for i in $(seq 600); do grep -q \"" + after + "\" " + dir + "/out && break; sleep 0.1; done; " +
         "for p in $(pgrep -P $L); do grep -qx trainrun-rank" + std::to_string(rank) + " /proc/$p/comm" +
         " && kill -9 $p; done; s=$(date +%s); wait $L; echo rc=$? secs=$(( $(date +%s) - s ))'";
}

// A TCP port for a rendezvous that was free a moment ago on every address (rank 0 listens on all
// of them): random in 10000-19999, below the kernel's ephemeral range, so that the ports the
// kernel hands to launchers, daemons and gloo connections while a job starts cannot take it
// (seen once with a kernel-chosen port: "already in use"), and clear of the ports
// tests/launchers/slurm_cluster.sh gives its daemons (20000-31999).
inline int free_port() {
  static std::mt19937 rng(std::random_device{}());
  for (;;) {
    int port = 10000 + int(rng() % 10000);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(port));
    bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free) return port;
  }
}

// Two "nodes" as two network namespaces joined by a veth pair (10.231.0.1 and 10.231.0.2), made
// and removed by the test. As on a cluster, each node has a hostname of its own (a UTS namespace)
// that both resolve to its address (ip netns exec mounts /etc/netns/NAME/hosts over /etc/hosts):
// torchrun's agents advertise their hostname as MASTER_ADDR.
class TwoNodes {
 public:
  TwoNodes() {
    tag_ = std::to_string(::getpid() % 100000);
    std::string a = name(0), b = name(1);
    std::string hosts = "127.0.0.1 localhost\n10.231.0.1 " + a + "\n10.231.0.2 " + b + "\n";
    for (int n : {0, 1}) {
      write_file("/etc/netns/" + name(n) + "/hosts", hosts);
      write_file(dir_ / ("node" + std::to_string(n)), "#!/bin/sh\nhostname " + name(n) + " && exec \"$@\"\n");
      fs::permissions(dir_ / ("node" + std::to_string(n)), fs::perms::owner_all);
    }
    std::string script = "set -e; ip netns add " + a + "; ip netns add " + b + "; ip link add va" + tag_ +
                         " type veth peer name vb" + tag_ + "; ip link set va" + tag_ + " netns " + a +
                         "; ip link set vb" + tag_ + " netns " + b + "; ip -n " + a + " addr add 10.231.0.1/24 dev va" +
                         tag_ + "; ip -n " + b + " addr add 10.231.0.2/24 dev vb" + tag_ + "; for n in " + a + " " + b +
                         "; do ip -n $n link set lo up; done; ip -n " + a + " link set va" + tag_ + " up; ip -n " + b +
                         " link set vb" + tag_ + " up";
    auto r = run("bash -c '" + script + "'");
    ok_ = r.code == 0;
    why_ = r.err;
  }
  ~TwoNodes() {
    run("ip netns del " + name(0) + "; ip netns del " + name(1));
    std::error_code ec;
    for (int n : {0, 1}) fs::remove_all("/etc/netns/" + name(n), ec);
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  // The prefix that runs a command on `node` (0 or 1), under that node's hostname.
  std::string exec(int node) const {
    return "ip netns exec " + name(node) + " unshare --uts " + (dir_ / ("node" + std::to_string(node))) + " ";
  }
  // Node `node`'s hostname (each namespace's /etc/hosts names both; node i is 10.231.0.<i + 1>).
  std::string host(int node) const { return name(node); }
  // A command that SIGKILLs every process on `node`: a node that dies.
  std::string kill_all(int node) const { return "kill -9 $(ip netns pids " + name(node) + ")"; }

 private:
  std::string name(int node) const { return std::string(node ? "trB" : "trA") + tag_; }
  TempDir dir_;
  std::string tag_, why_;
  bool ok_ = false;
};

// An IDX file of uint8 `data` with sizes `dims`, as MNIST's (magic 0x0000080<dims>, big-endian sizes).
inline std::string idx_file(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out{0, 0, 8, char(dims.size())};
  for (uint32_t d : dims) out += std::string{char(d >> 24), char(d >> 16 & 255), char(d >> 8 & 255), char(d & 255)};
  return out + data;
}

// An MNIST folder (IDX files, as mnist reads them) of black 28x28 images, `train` to train on and
// 20 to evaluate, but for training example `bad` with a white pixel: normalized with std 1e-39,
// that pixel is inf, and its batch's loss is nan. Every other input is exactly 0.
inline void write_black_mnist(const std::string& dir, int train, int bad) {
  auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16 & 255), char(v >> 8 & 255), char(v & 255)};
  };
  auto split = [&](const std::string& prefix, int n, int white) {
    std::string images = be32(0x803) + be32(uint32_t(n)) + be32(28) + be32(28), labels = be32(0x801) + be32(uint32_t(n));
    for (int i = 0; i < n; ++i) {
      std::string pixels(784, '\0');
      if (i == white) pixels[400] = char(255);
      images += pixels;
      labels += char(i % 10);
    }
    write_file(dir + "/" + prefix + "-images-idx3-ubyte", images);
    write_file(dir + "/" + prefix + "-labels-idx1-ubyte", labels);
  };
  split("train", train, bad);
  split("t10k", 20, -1);
}

// Every file under `dir` with its size and modification time: what "nothing written" compares.
inline std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> snapshot(
    const std::filesystem::path& dir) {
  std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = {e.file_size(), e.last_write_time()};
  return out;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace trainrun::test
