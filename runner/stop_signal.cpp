#include "runner/stop_signal.h"

#include <signal.h>

#include <cstdlib>

namespace trainrun {

namespace {

volatile sig_atomic_t g_signal = 0;
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) { g_signal = sig; }

}  // namespace

StopSignal::StopSignal() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C is not caught
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignal::~StopSignal() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

bool StopSignal::raised(long long step, bool main_process) const {
  if (g_signal) return true;
  static const char* at = std::getenv("TRAINRUN_INTERRUPT_AT_STEP");
  return at && main_process && step == std::atoll(at);
}

int StopSignal::signal() { return g_signal; }

}  // namespace trainrun
