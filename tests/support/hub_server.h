// tests/py/hub_server.py started for one test (a Hub stand-in and a file mirror on 127.0.0.1),
// and environment variables set for one test.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <optional>

#include "test_util.h"

namespace trainrun::test {

class HubServer {
 public:
  // `config` as documented in hub_server.py; its files and request log live in `dir`.
  HubServer(const nlohmann::json& config, const fs::path& dir) : log_(dir / "requests.log") {
    write_file((dir / "hub.json").string(), config.dump());
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      std::string script = source("tests/py/hub_server.py"), json = (dir / "hub.json").string(), log = log_.string();
      ::execl(kPython, kPython, script.c_str(), json.c_str(), log.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    port_ = line.empty() ? 0 : std::stoi(line);
  }
  ~HubServer() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  // "METHOD path range" per request so far.
  std::vector<std::string> requests() const {
    std::vector<std::string> out;
    std::istringstream in(read_file(log_.string()));
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const auto& r : requests()) n += r.rfind(prefix, 0) == 0;
    return n;
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// Sets (a value) or unsets (nullopt) variables; restores them when it goes.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(std::initializer_list<std::pair<const char*, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) set(name, value);
  }
  void set(const char* name, const std::optional<std::string>& value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    value ? ::setenv(name, value->c_str(), 1) : ::unsetenv(name);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace trainrun::test
