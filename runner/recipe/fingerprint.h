// What makes a run "the same job", so that output.resume: auto continues only the run that is in
// the folder (timm and Lightning start a folder per run; the Hugging Face Trainer resumes only
// when asked; trainrun resumes by default for pre-emption and requeues, and must not continue
// another run by mistake). Every checkpoint records it (trainrun_state.json, "job").
//
// In the fingerprint (the recipe as written, defaults and overrides applied, before `auto` values
// are resolved, numbers compared as numbers): seed, model, data (dataset but how it is fetched:
// download, cache_dir, retries, eval_split_name; transforms, batch transforms, mixup, sampler,
// max_train_samples), optimizer, scheduler, freeze, the training
// math of `train` (loss, max_grad_norm, bn_eval, unfreeze_at_epoch, ema), and the global batch
// (data.batch_size x processes x train.grad_accum_steps). Left out, as they may change between
// sessions of one job: the world layout, threads, precision and memory format, logging,
// evaluation and checkpoint settings, callbacks, data.workers, the eval batch and eval sample
// cap, and train.epochs (which may grow: more epochs continue a run).
#pragma once

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

// The recipe part of the fingerprint, from a loaded recipe's root (before build_job resolves it).
nlohmann::ordered_json recipe_fingerprint(const YAML::Node& root);

// The whole fingerprint: `recipe` (recipe_fingerprint) with the global batch of this world.
nlohmann::ordered_json job_fingerprint(const nlohmann::ordered_json& recipe, int64_t batch_size, int64_t world_size,
                                       int64_t grad_accum_steps);

// Where `now` differs from `saved`, in recipe order: "optimizer.name adamw -> lamb", with the
// recipe's path syntax (data.train_transforms[1].normalize.mean); a key one side lacks reads
// "(none)".
std::vector<std::string> fingerprint_differences(const nlohmann::ordered_json& saved, const nlohmann::ordered_json& now);

}  // namespace trainrun
