// Class imbalance: train.loss.weight (per-class loss weights, or sklearn's `balanced` from the
// training split's label counts) and data.sampler: weighted (WeightedRandomSampler's per-example
// weights, 1 / class count). Labels are counted with Dataset::label, without decoding an image.
#pragma once

#include "runner/recipe/job.h"

namespace trainrun {

// Writes train.loss.weight: balanced into job.recipe as its numbers (so the resolved recipe shows
// what ran), checks a weight list against the model's number of classes, and fills
// job.sample_weights for data.sampler: weighted. Call once the model is built (num_classes is
// resolved) and before the loss is. Without data (predict from labels.json) no loss is computed
// and nothing is counted: `balanced` becomes null. RecipeError names the key.
void resolve_class_balance(Job& job, bool have_data);

}  // namespace trainrun
