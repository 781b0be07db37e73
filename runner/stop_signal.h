// SIGINT / SIGTERM during training: the handler only raises a flag; the loop looks at it at
// optimizer-step boundaries, where (combined over ranks) every rank stops at the same step,
// saves a checkpoint and exits 130. A second signal kills at once (the default action).
#pragma once

namespace trainrun {

class StopSignal {
 public:
  StopSignal();   // installs the handlers
  ~StopSignal();  // restores the previous ones
  // Whether a signal arrived on this process (or a test asked to stop at this step through
  // TRAINRUN_INTERRUPT_AT_STEP, which acts as SIGINT arriving on rank 0 during that step).
  bool raised(long long step, bool main_process) const;
  static int signal();  // the signal that arrived, 0 if none
};

}  // namespace trainrun
