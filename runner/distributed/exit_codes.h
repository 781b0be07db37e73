// trainrun's exit codes, each named once: the launcher (this layer) and the command line
// (runner/cli, above) return these constants, and `trainrun describe --format markdown` writes
// docs/reference/exit-codes.md from kExitCodes. Schedulers and batch scripts act on the values
// (README "Stopping, failing, and exit codes"), so they never change. Here rather than in
// runner/cli/ because the launcher, below the CLI, returns them too.
#pragma once

namespace trainrun {

constexpr int kExitOk = 0;             // done
constexpr int kExitFailed = 1;         // failed after starting
constexpr int kExitBadInput = 2;       // bad recipe or command line; nothing started or written
constexpr int kExitInterrupted = 130;  // SIGINT / SIGTERM, after a checkpoint
constexpr int kExitPreempted = 138;    // SIGUSR1 (128 + SIGUSR1), after a checkpoint

struct ExitCodeInfo {
  int code;
  const char* meaning;        // one line: when trainrun returns it
  const char* from_launcher;  // when trainrun's own launcher (launcher.h) returns it for its workers
};

inline constexpr ExitCodeInfo kExitCodes[] = {
    {kExitOk, "done: the run finished, or the command did what it was asked (`--help` and `--version` too)",
     "every worker exited 0"},
    {kExitFailed,
     "failed after starting (a nan/inf loss, a rank that died, a disk error; the message starts with the rank), or "
     "`predict` skipped an image that does not decode",
     "a worker failed and `world.max_restarts` restarts of the world are spent"},
    {kExitBadInput,
     "bad recipe or command line, named on stderr: nothing started and nothing written; a restart would fail the "
     "same way",
     "a worker exited 2; the world is not restarted"},
    {kExitInterrupted,
     "interrupted by SIGINT or SIGTERM, after a checkpoint of the step every rank stopped after; the next run resumes",
     "SIGINT or SIGTERM reached the launcher, or the workers stopped with 130"},
    {kExitPreempted,
     "pre-empted by SIGUSR1 (128 + SIGUSR1), after a checkpoint as for 130; a batch script requeues the job on it",
     "SIGUSR1 reached the launcher, or the workers stopped with 138"},
};

}  // namespace trainrun
