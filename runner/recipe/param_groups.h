// The optimizer's parameter groups for a job: the model's layer ids for optimizer.layer_decay
// (timm's group_parameters over group_matcher, or its auto_group_layers fallback) and the freeze
// rules' lr_scale, handed to plan_param_groups (components/optim/optim.h), which lays them out.
#pragma once

#include "runner/recipe/job.h"

namespace trainrun {

// The model's layer ids for optimizer.layer_decay.
LayerIds layer_ids(const Classifier& model);

// The optimizer's groups over `params`: optimizer.no_decay / layer_decay / groups and the
// freeze rules' lr_scale.
ParamGroups job_param_groups(const Job& job, const NamedParameters& params);

}  // namespace trainrun
