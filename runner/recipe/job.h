// Everything a recipe names, built through the registries: the step between "validated recipe"
// and "training loop". Used by `trainrun check`, training, and eval.
#pragma once

#include "components/data/batch_transform.h"
#include "components/data/dataset.h"
#include "components/data/transform.h"
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "runner/recipe/recipe.h"
#include "runner/recipe/run_config.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace trainrun {

// A value the job resolved from `auto` (or null), and why: what `check` and the resolved recipe say.
struct ResolvedValue {
  std::string path, reason;
};

struct Job {
  Recipe recipe;
  RunConfig config{};  // the fixed sections, typed (read once, after `auto` values are resolved)
  DatasetSplits data;
  std::shared_ptr<Classifier> model;
  Compose train_transforms, eval_transforms;
  std::vector<std::shared_ptr<BatchTransform>> batch_transforms;  // of training batches
  std::shared_ptr<Loss> loss;
  at::Tensor sample_weights;  // data.sampler: weighted: one per training example (float64); else undefined
  std::string device = "cpu";
  std::string precision = "fp32";  // resolved: fp32 | bf16 | fp16
  std::string precision_reason;    // why, when the recipe said auto (the banner shows it)
  bool channels_last = false;      // memory_format resolved: the model's 4-D weights and inputs are NHWC
  std::string memory_format_reason;
  int64_t threads = 1;
  std::vector<std::string> notes;  // things the log should say (re-initialised classifier, ...)
  // data.eval_transforms: model: whose pretrained_cfg the pipeline follows (empty for a list), or
  // pending: `check` did not fetch the weights' config.json, so there is no pipeline yet.
  std::string eval_transforms_from;
  bool eval_transforms_pending = false;
  // The recipe's part of what makes a run the same job (runner/recipe/fingerprint.h), taken
  // before `auto` values were resolved.
  nlohmann::ordered_json fingerprint;
  std::vector<ResolvedValue> resolved;  // the recipe's `auto` values, resolved into job.recipe (resolve.h)

  int64_t total_parameters() const;
  int64_t trainable_parameters() const;
  NamedParameters trainable() const;
};

// What to leave out when a command needs less than a training run.
struct JobOptions {
  // Build the datasets. Without them `classes` names the classes (predict with a run's
  // labels.json) and job.data has no splits.
  bool data = true;
  std::vector<std::string> classes;
  // The weights that will replace the model's (predict, export): without the data and without
  // `classes`, num_classes: auto is the size of their classifier head.
  const TensorList* weights = nullptr;
  std::string weights_source;  // their file, for messages
  // Without the data, `classes` or `weights` (check of a recipe whose dataset is not downloaded):
  // num_classes: auto builds the model with this many, > 0.
  int64_t placeholder_classes = 0;
  // Load model.pretrained (not when a checkpoint's weights replace it anyway).
  bool pretrained = true;
  // Download what is missing (model.pretrained from the Hub). `check` only notes what a run
  // would download and loads what is cached.
  bool download = true;
};

// data.dataset built by its registry entry, with data.max_train_samples / max_eval_samples
// applied: what a run trains and evaluates on, without the model (`trainrun shards`). `download`:
// as JobOptions::download. Throws RecipeError or DataError (also for a dataset of one class: a
// classifier needs two).
DatasetSplits build_datasets(const Recipe& recipe, const DataConfig& data, bool download = true);
// data.cv_folds: the training split becomes all folds but data.cv_fold, the eval split that fold
// (named fold-I), cut as components/data/folds.h says with the recipe's seed.
void apply_folds(DatasetSplits& splits, const DataConfig& data, uint64_t seed);

// Builds data, model (with pretrained weights and freeze rules), transforms and loss. Fills
// `auto` values (num_classes, normalize: model, threads) into job.recipe so the resolved
// recipe shows what ran. Throws RecipeError, DataError or WeightsError: bad input, exit 2.
Job build_job(Recipe recipe, const JobOptions& options = {});

// A transform list as the recipe writes it ([{name: {params}}, ...]), each made by its registry
// entry with what the model says about its inputs; `path` names the list in errors (RecipeError).
Compose build_transforms(const YAML::Node& list, const ModelInput& model, const std::string& path);

// Builds the optimizer over the trainable parameters (or `params`) in the groups
// runner/recipe/param_groups.h plans, and its scheduler. Freeze rules: runner/recipe/freeze.h.
std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job);
std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job, const NamedParameters& params);
std::shared_ptr<Scheduler> build_scheduler(const Job& job, torch::optim::Optimizer& optimizer, int64_t total_steps,
                                           int64_t steps_per_epoch);

}  // namespace trainrun
