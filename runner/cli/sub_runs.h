// The runs `sweep` and `cv` start: this same binary (/proc/self/exe) with a recipe, its overrides
// and an output.dir of its own, each a whole trainrun run (its own launcher and workers, its own
// resume). Each child leads a process group; SIGINT / SIGTERM / SIGUSR1 sent to this process are
// passed to every running child, which stops after a checkpoint as a run does (130, 138); a child
// whose parent dies gets SIGTERM.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trainrun::cli {

class SubRuns {
 public:
  SubRuns();   // installs the signal forwarding
  ~SubRuns();  // restores the previous handlers
  SubRuns(const SubRuns&) = delete;
  SubRuns& operator=(const SubRuns&) = delete;

  // Starts `trainrun ARGS`; its stdout and stderr go to `log` (appended) when given, else to ours.
  pid_t start(const std::vector<std::string>& args, const std::string& log = "");
  struct Ended {
    pid_t pid;
    int code;  // the exit code; 128 + N when killed by signal N
  };
  Ended wait_one();  // blocks until a child ends
  std::size_t running() const { return running_; }
  // A stop signal arrived (and went to the children): start nothing more.
  bool stopping() const;

 private:
  std::size_t running_ = 0;
};

}  // namespace trainrun::cli
