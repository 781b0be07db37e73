// SIGINT / SIGTERM / SIGUSR1 during training: the handler only raises a flag; the loop looks at it
// at optimizer-step boundaries, where (combined over ranks) every rank stops after the same step,
// saves a checkpoint and exits: 130 for SIGINT/SIGTERM (interrupted), 138 for SIGUSR1 (pre-empted:
// the scheduler may requeue the job, which resumes).
//
// One Ctrl-C can reach a worker twice: from the terminal's process group and again from the
// launcher that forwards it (torchrun's agent, srun). Signals within kRepeatWindowS of the first
// are that same request; a signal later than that kills at once (a second Ctrl-C).
#pragma once

namespace trainrun {

class StopSignal {
 public:
  static constexpr int kRepeatWindowS = 2;
  StopSignal();   // installs the handlers
  ~StopSignal();  // restores the previous ones
  // The first signal that arrived on this process, 0 if none (or SIGINT when a test asked to stop
  // at this step through TRAINRUN_INTERRUPT_AT_STEP, as if it arrived on rank 0 during that step).
  int raised(long long step, bool main_process) const;
};

// The exit code for a run stopped by `sig` after a checkpoint: 138 (128 + SIGUSR1) for a
// pre-emption, 130 for an interruption.
int exit_code_for_stop(int sig);

}  // namespace trainrun
