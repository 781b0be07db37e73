// The recipe's fixed sections as plain structs, read once right after the recipe is validated
// and the job built (so every `auto` is resolved). The loop and the CLI read these; nothing past
// this point looks a key up by string. Components keep receiving their validated Config view.
// Each key is declared once, in sections.cpp (world's in runner/distributed/world_config.cpp):
// its default, type, range and doc, and the member it fills, so the members have no defaults here.
#pragma once

#include "registry/schema.h"
#include "runner/distributed/world_config.h"
#include "runner/io/checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

struct DataConfig {
  std::string dataset;               // the registry name data.dataset chose
  int64_t batch_size;                // per process
  // Examples per optimizer step over every process (null: batch_size x processes x
  // train.grad_accum_steps); the accumulation is derived from it once the world is known
  // (fit_global_batch, runner/recipe/preflight.h).
  std::optional<int64_t> global_batch_size;
  int64_t eval_batch_size;           // per process (null in the recipe = batch_size)
  int64_t workers;
  bool skip_bad_files;               // on_bad_file: skip | error
  std::string sampler;               // random | weighted (WeightedRandomSampler, 1 / class count)
  std::optional<int64_t> max_train_samples, max_eval_samples;  // nullopt = every example
  // k-fold cross-validation (components/data/folds.h): nullopt = none.
  std::optional<int64_t> cv_folds;
  int64_t cv_fold;
  bool cv_stratified;
  bool synthetic;  // every training step takes the run's first batch again, held on the device
};

// train.ema: timm's ModelEmaV3 (runner/train/callbacks/ema.cpp).
struct EmaOptions {
  double decay = 0.9998;
  double min_decay = 0.0;
  bool warmup = false;
  double warmup_gamma = 1.0;
  double warmup_power = 2.0 / 3.0;
  int64_t every_n_steps = 1;
};

struct TrainConfig {
  int64_t epochs;
  int64_t grad_accum_steps;
  double max_grad_norm;               // 0 = no clipping (null)
  bool bn_eval;
  std::optional<int64_t> unfreeze_at_epoch;  // read as the last freeze rule (RunConfig::freeze)
  int64_t log_every_steps;
  std::string eval_every;             // epoch | never | N optimizer steps
  int64_t eval_steps;                 // N, when eval_every is a number
  std::string task;                   // single_label | multilabel
  std::vector<std::string> metrics;   // task_metric_names()
  double threshold;                   // multilabel: the sigmoid above which a class is predicted
  std::optional<EmaOptions> ema;      // null: no EMA
  // activation_checkpointing: the stages recomputed in backward, as written ([] = none); `true`
  // = every stage of the model, which the job resolves into the list.
  bool checkpoint_every_stage;
  std::vector<std::string> checkpoint_stages;
};

// One freeze rule; train.unfreeze_at_epoch is appended as {"*", true, E}.
struct FreezeRule {
  std::string params;  // fnmatch glob over parameter names
  bool trainable;
  int64_t from_epoch;
  double lr_scale = 1.0;  // factor on the lr of the parameters this rule makes trainable
};

// A registered component named in a list (callbacks:), with its validated parameters.
struct ComponentConfig {
  std::string name;
  Config config;
};

// The evaluation metrics checkpoint-best and early stopping may judge by: eval_loss, eval_accuracy,
// eval_top5 and, with train.ema, the EMA weights' eval_ema_* (`accuracy` is short for
// eval_accuracy, `ema_loss` for eval_ema_loss, as the Trainer's metric_for_best_model).
std::vector<std::string> evaluation_metric_choices();
// What train.metrics takes: the single-label metrics, then the multi-label ones not among them.
std::vector<std::string> task_metric_names();
// train.metrics' word for a per-class table after each evaluation (no figure of its own).
constexpr const char* kPerClassMetric = "per_class";
// Those of train.task: single_label (multilabel_metric_names() has the others).
const std::vector<std::string>& single_label_metric_names();
// Why `metric` (a short name: map, top5) is not one of `task`'s; "" when it is.
std::string metric_task_mismatch(const std::string& task, const std::string& metric);
std::string evaluation_metric_name(const std::string& written);
// Why the evaluations of a run with `train` do not report `metric` (a full name): "eval_ema_loss
// is an EMA metric, but train.ema is null"; "" when they do.
std::string unevaluated_metric(const TrainConfig& train, const std::string& metric);

struct RunConfig {
  std::string name;
  uint64_t seed;
  std::string model, optimizer, scheduler;  // the registry names the sections chose
  std::string precision;                    // as written: fp32 | bf16 | fp16 | auto
  std::string memory_format;                // as written: auto | contiguous | channels_last
  DataConfig data;
  TrainConfig train;
  CheckpointOptions output;
  WorldConfig world;
  std::vector<FreezeRule> freeze;
  std::vector<ComponentConfig> callbacks;  // the recipe's, after the built-in ones

  static RunConfig from(const YAML::Node& root);
};

}  // namespace trainrun
