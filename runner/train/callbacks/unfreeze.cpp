// Gradual unfreezing (freeze[].from_epoch, train.unfreeze_at_epoch): parameters that start
// training at an epoch join the running optimizer (Trainer::add_trainable). A resumed run adds
// the groups of the epochs it already passed before the optimizer's state loads.
#include "runner/logging/logging.h"
#include "runner/recipe/freeze.h"
#include "runner/train/callbacks/callbacks.h"

#include <spdlog/spdlog.h>

namespace trainrun {

namespace {

class GradualUnfreezing : public Callback {
 public:
  void on_resume(Trainer& t, const TrainerState& saved) override {
    for (int64_t e = 1; e <= saved.epoch_index; ++e) unfreeze(t, e, /*resuming=*/true);
  }
  void on_epoch_begin(Trainer& t, TrainerControl&) override { unfreeze(t, t.state().epoch_index, /*resuming=*/false); }

 private:
  static void unfreeze(Trainer& t, int64_t epoch, bool resuming) {
    Job& job = t.job();
    if (!freeze_changes_at(job, epoch)) return;
    NamedParameters added = apply_freeze_schedule(job, epoch);
    if (added.empty()) return;
    t.add_trainable(added);
    if (!resuming)
      spdlog::info("  Epoch {}: unfreezing {} parameter tensors ({} of {} parameters now train)", epoch, added.size(),
                   thousands(job.trainable_parameters()), thousands(job.total_parameters()));
  }
};

}  // namespace

std::shared_ptr<Callback> unfreeze_callback() { return std::make_shared<GradualUnfreezing>(); }

}  // namespace trainrun
