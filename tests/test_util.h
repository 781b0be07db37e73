// Helpers shared by the tests: temp folders, running the trainrun binary, small files.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
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
  std::ostringstream expect;
  expect << "'eval_accuracy': " << accuracy;
  EXPECT_NE(r.out.find(expect.str()), std::string::npos) << r.out << " vs " << accuracy;
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

// Starts `command` in the background with stdout/stderr in dir/out and dir/err, waits for its
// first logged loss, SIGKILLs the worker whose RANK is `rank`, and waits for the command.
// Prints "rc=<exit code> secs=<seconds from the kill to the end>".
inline std::string kill_rank_after_first_log(const std::string& command, const std::string& dir, int rank) {
  return "bash -c '" + command + " >" + dir + "/out 2>" + dir + "/err & L=$!; " +
         "for i in $(seq 600); do grep -q loss " + dir + "/out && break; sleep 0.1; done; " +
         "for p in $(pgrep -P $L); do tr \"\\0\" \"\\n\" </proc/$p/environ | grep -qx RANK=" + std::to_string(rank) +
         " && kill -9 $p; done; s=$(date +%s); wait $L; echo rc=$? secs=$(( $(date +%s) - s ))'";
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace trainrun::test
