// model.pretrained: the weights a recipe asks for (a .safetensors file, hf-hub:ORG/NAME, or
// `true` for the architecture's published ones), found or downloaded and loaded into the model;
// and the evaluation preprocessing they were published with (data.eval_transforms: model).
#pragma once

#include "runner/recipe/job.h"

namespace trainrun {

// Loads model.pretrained into job.model, through the model's adapt_pretrained (a resampled ViT
// pos_embed, a re-initialised classifier go into job.notes). With
// options.download false (`check`), a Hub file is loaded only if cached, and a note says which.
// WeightsError for weights that do not fit, RecipeError for a spec that names none.
void load_pretrained(Job& job, const JobOptions& options);

// data.eval_transforms: model -> timm's eval pipeline (components/data/transforms/timm_eval.h) for the
// weights' pretrained_cfg: the config.json beside model.safetensors for hf-hub: weights (and
// `true`), fetched through the Hub cache as the weights are, at the model's input_size where it
// takes no other (fixed_input_size); the architecture's InputConfig for a local file or none.
// Written into job.recipe as the transform list it stands for, so the resolved recipe shows it;
// job.eval_transforms_from says where it came from. Nothing to do for a list. With
// options.download false (`check`) an uncached config.json is not fetched: a note says so,
// `model` stays, and job.eval_transforms_pending is set. RecipeError for a config.json that
// cannot be had or read, naming it and the key.
void resolve_eval_transforms(Job& job, const JobOptions& options);

}  // namespace trainrun
