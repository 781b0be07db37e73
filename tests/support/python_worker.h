// One python3-torch process per test process for the reference scripts that tests call many
// times (tests/py/serve.py): `python_reference("schedule.py", {spec})` returns what
// `python3 tests/py/schedule.py SPEC` would (exit code, stdout, stderr), with torch imported once
// for all the calls of the process instead of once a call (~1.3 s each on a 2-core VM). The
// worker starts at the first call and ends with the process; if it dies, the call says so
// (code -1) and the next call starts another.
#pragma once

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace trainrun::test {

class PythonWorker {
 public:
  static PythonWorker& instance() {
    static PythonWorker worker;
    return worker;
  }

  RunResult call(const std::string& script, const std::vector<std::string>& args) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == pid_) {  // died since the last call: no write into its
      pid_ = -1;                                                   // closed pipe (SIGPIPE would end the test)
      stop();
    }
    if (pid_ <= 0 && !start()) return {-1, "", "python_worker: could not start " + std::string(kPython)};
    const std::string request = nlohmann::json{{"script", script}, {"args", args}}.dump() + "\n";
    std::string line;
    if (std::fwrite(request.data(), 1, request.size(), to_) == request.size() && std::fflush(to_) == 0) {
      for (int c; (c = std::fgetc(from_)) != EOF && c != '\n';) line += char(c);
    }
    if (line.empty()) {
      stop();
      return {-1, "", "python_worker: tests/py/serve.py ended without answering " + script};
    }
    const auto answer = nlohmann::json::parse(line);
    return {answer["code"].get<int>(), answer["out"].get<std::string>(), answer["err"].get<std::string>()};
  }

  ~PythonWorker() { stop(); }

 private:
  PythonWorker() = default;

  bool start() {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return false;
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]), ::close(in[1]);
      return false;
    }
    const std::string serve = source("tests/py/serve.py");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::execl(kPython, kPython, serve.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]), ::close(out[1]);
    if (pid_ < 0) {
      ::close(in[1]), ::close(out[0]);
      return false;
    }
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
    return true;
  }

  void stop() {
    if (to_) std::fclose(to_);
    if (from_) std::fclose(from_);
    to_ = from_ = nullptr;
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);  // its stdin closed, serve.py's loop ends
    pid_ = -1;
  }

  std::mutex mutex_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

inline RunResult python_reference(const std::string& script, const std::vector<std::string>& args) {
  return PythonWorker::instance().call(script, args);
}

}  // namespace trainrun::test
