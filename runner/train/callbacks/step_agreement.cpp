// What the ranks agree on before each optimizer step: a rank whose loss was not finite since the
// last step (the step is not taken; every rank stops, naming it) and a stop signal on any rank
// (every rank stops after this same step, with a checkpoint). One small allreduce per step.
#include "runner/distributed/stop_signal.h"
#include "support/errors.h"
#include "components/callbacks/trainer_state.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/distributed/accelerator.h"

#include <ATen/ATen.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace trainrun {

namespace {

struct StepAgreement {
  int64_t nonfinite_rank = -1;  // lowest such rank, -1 if none
  double nonfinite_value = 0;   // its loss (nan, inf or -inf)
  int stop_signal = 0;          // SIGINT if any rank was interrupted, else SIGUSR1 if pre-empted, else 0
};

StepAgreement agree_on_step(const Accelerator& acc, const at::Tensor& nonfinite_loss, int signal) {
  const int64_t world = acc.world_size();
  // [interrupted, pre-empted, then per rank its nan/inf loss or 0], built on the device; each
  // rank's slot is 0 on every other rank, so the sum carries the value itself.
  at::Tensor mine = at::zeros({2 + world}, nonfinite_loss.options());
  mine[0] = double(signal && signal != SIGUSR1);
  mine[1] = double(signal == SIGUSR1);
  mine[2 + acc.rank()] = nonfinite_loss;
  // The one host read of the step (a collective anyway when distributed).
  at::Tensor all = acc.world().distributed() ? acc.reduce_sum(mine) : mine.cpu();
  auto a = all.accessor<double, 1>();
  StepAgreement out;
  out.stop_signal = a[0] > 0 ? SIGINT : a[1] > 0 ? SIGUSR1 : 0;
  for (int64_t r = 0; r < world && out.nonfinite_rank < 0; ++r)
    if (!std::isfinite(a[2 + r])) out.nonfinite_rank = r, out.nonfinite_value = a[2 + r];
  return out;
}

std::string loss_text(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

class AgreeOnStep : public Callback {
 public:
  void on_pre_optimizer_step(Trainer& t, TrainerControl& control) override {
    const int64_t next = t.state().global_step + 1;
    // Tests only: a slower step, so that a launcher's events (a node joining the world, or killed)
    // land mid-run (tests/distributed/elastic_test.cpp).
    static const char* delay = std::getenv("TRAINRUN_STEP_DELAY_MS");
    if (delay) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoll(delay)));
    StepAgreement agreed =
        agree_on_step(t.accelerator(), t.take_nonfinite_loss(), signal_.raised(next, t.is_main_process()));
    if (agreed.nonfinite_rank >= 0)
      throw WorldFailure("step " + std::to_string(next) + ": loss is " + loss_text(agreed.nonfinite_value) +
                         " on rank " + std::to_string(agreed.nonfinite_rank) +
                         "; every rank stopped before the optimizer step (lower the learning rate or check the "
                         "data); checkpoints saved before it are kept");
    if (!agreed.stop_signal) return;
    control.should_training_stop = true;
    control.should_save = true;
    control.stop_exit_code = exit_code_for_stop(agreed.stop_signal);
    control.stop_reason = "interrupted (" + std::string(strsignal(agreed.stop_signal)) + ")";
  }

 private:
  StopSignal signal_;  // handlers installed from construction, before the trainer joins the world
};

}  // namespace

std::shared_ptr<Callback> step_agreement_callback() { return std::make_shared<AgreeOnStep>(); }

}  // namespace trainrun
