#include "runner/train/callbacks/callbacks.h"

#include "runner/recipe/job.h"
#include "runner/train/trainer.h"

namespace trainrun {

std::vector<std::shared_ptr<Callback>> all_callbacks(const Job& job, bool progress) {
  std::vector<std::shared_ptr<Callback>> out = {
      console_callback(),        metrics_file_callback(),           step_agreement_callback(),
      flow_callback(job.config.train), unfreeze_callback(), checkpoint_callback(job.config.output)};
  if (progress) out.insert(out.begin(), progress_callback());
  // Before the recipe's callbacks, so theirs see the EMA's metrics too.
  if (job.config.train.ema) out.push_back(ema_callback(*job.config.train.ema));
  for (const auto& c : job.config.callbacks) out.push_back(Registry<Callback>::instance().get(c.name).make(c.config));
  return out;
}

EvalResult train(Job& job, const WorldInfo& world, const std::vector<std::shared_ptr<Callback>>& extra, bool progress) {
  std::vector<std::shared_ptr<Callback>> callbacks = all_callbacks(job, progress);
  callbacks.insert(callbacks.end(), extra.begin(), extra.end());
  TrainLoop loop(job, world, std::move(callbacks));
  return loop.train();
}

}  // namespace trainrun
