// Freeze rules over time: which parameters train at an epoch, the optimizer groups that newly
// trainable ones join, and BatchNorm statistics kept as loaded for frozen layers.
#pragma once

#include "runner/recipe/job.h"

#include <cstdint>
#include <vector>

namespace trainrun {

// Freeze rules (ordered globs, last match wins) applied to requires_grad; only the rules whose
// `from_epoch` has come by `epoch` count. Returns the number of parameters each rule matches at
// any epoch, so a rule that matches nothing can be reported.
std::vector<int64_t> apply_freeze_rules(torch::nn::Module& model, const std::vector<FreezeRule>& rules, int64_t epoch = 0);

// Gradual unfreezing: whether the freeze rules (or train.unfreeze_at_epoch) change at the start
// of `epoch`, and, applied, which parameters that made trainable (in the model's order).
bool freeze_changes_at(const Job& job, int64_t epoch);
NamedParameters apply_freeze_schedule(Job& job, int64_t epoch);

// Adds newly trainable parameters to a running optimizer as torch's add_param_group does, in
// the groups (decayed, zero-decay) and with the settings the recipe's optimizer gives them.
// The scheduler sets their lr from its next step on.
void add_param_groups(const Job& job, torch::optim::Optimizer& optimizer, const NamedParameters& params);

// train.bn_eval: puts BatchNorm layers whose parameters are all frozen back in eval mode (call
// after model.train()), so their running statistics stay as loaded, as timm's freeze_bn.
// Returns how many layers it froze.
int64_t freeze_batchnorm_statistics(torch::nn::Module& model);

}  // namespace trainrun
