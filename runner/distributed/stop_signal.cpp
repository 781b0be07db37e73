#include "runner/distributed/stop_signal.h"

#include "runner/distributed/exit_codes.h"

#include <signal.h>
#include <time.h>

#include <cstdlib>

namespace trainrun {

namespace {

volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_first_at = 0;  // CLOCK_MONOTONIC seconds of the first signal
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1};
struct sigaction g_old[3];

// Async-signal-safe: clock_gettime, signal and raise are on POSIX's list.
void on_signal(int sig) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  if (!g_signal) {
    g_signal = sig;
    g_first_at = sig_atomic_t(now.tv_sec);
    return;
  }
  if (now.tv_sec - g_first_at <= StopSignal::kRepeatWindowS) return;  // the same request, relayed
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

StopSignal::StopSignal() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  // The signal only sets a flag: a read or write it interrupts inside gloo or c10d (which do not
  // all retry on EINTR) resumes, rather than failing the collective it was part of.
  sa.sa_flags = SA_RESTART;
  ::sigemptyset(&sa.sa_mask);
  for (int s : kSignals) ::sigaddset(&sa.sa_mask, s);  // one handler at a time
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_old[i]);
}

StopSignal::~StopSignal() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_old[i], nullptr);
}

int StopSignal::raised(long long step, bool main_process) const {
  if (g_signal) return g_signal;
  static const char* at = std::getenv("TRAINRUN_INTERRUPT_AT_STEP");
  return at && main_process && step == std::atoll(at) ? SIGINT : 0;
}

static_assert(kExitPreempted == 128 + SIGUSR1, "138 is the shell's code for SIGUSR1 (Linux)");
int exit_code_for_stop(int sig) { return sig == SIGUSR1 ? kExitPreempted : kExitInterrupted; }

}  // namespace trainrun
