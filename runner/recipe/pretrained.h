// model.pretrained: the weights a recipe asks for (a .safetensors file, hf-hub:ORG/NAME, or
// `true` for the architecture's published ones), found or downloaded and loaded into the model.
#pragma once

#include "runner/recipe/job.h"

namespace trainrun {

// Loads model.pretrained into job.model (a re-initialised classifier goes into job.notes). With
// options.download false (`check`), a Hub file is loaded only if cached, and a note says which.
// WeightsError for weights that do not fit, RecipeError for a spec that names none.
void load_pretrained(Job& job, const JobOptions& options);

}  // namespace trainrun
