// Building a job (job.h): the data, the model (its pretrained weights and freeze rules), the
// transforms, the loss, and the optimizer and scheduler over the trainable parameters. What
// `auto` becomes on this machine is resolve.cpp, model.pretrained pretrained.cpp, the freeze
// rules over time freeze.cpp, the optimizer's groups param_groups.cpp.
#include "runner/recipe/job.h"

#include "components/data/folds.h"
#include "components/data/sources/torchvision_download.h"
#include "components/data/streaming_dataset.h"
#include "runner/distributed/process_group.h"
#include "runner/recipe/class_balance.h"
#include "runner/recipe/fingerprint.h"
#include "runner/recipe/freeze.h"
#include "runner/recipe/param_groups.h"
#include "runner/recipe/pretrained.h"
#include "runner/recipe/resolve.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <torch/torch.h>

#include <fnmatch.h>

#include <algorithm>

namespace trainrun {

int64_t Job::total_parameters() const {
  int64_t n = 0;
  for (auto& p : model->parameters()) n += p.numel();
  return n;
}

int64_t Job::trainable_parameters() const {
  int64_t n = 0;
  for (auto& p : model->parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

NamedParameters Job::trainable() const {
  NamedParameters out;
  for (auto& p : model->named_parameters())
    if (p.value().requires_grad()) out.emplace_back(p.key(), p.value());
  return out;
}

namespace {

// data.max_train_samples / max_eval_samples: the first N examples.
std::shared_ptr<const Dataset> limit(std::shared_ptr<const Dataset> d, const std::optional<int64_t>& n) {
  if (!n || std::size_t(*n) >= d->size()) return d;
  return std::make_shared<Subset>(d, std::size_t(*n));
}

}  // namespace

// A transform may take its parameters from the model, as normalize's `mean: model`.
Compose build_transforms(const YAML::Node& list, const ModelInput& model, const std::string& path) {
  std::vector<std::shared_ptr<Transform>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string name = list[i].begin()->first.as<std::string>();
    Config params(list[i].begin()->second, path + "[" + std::to_string(i) + "]." + name);
    try {
      steps.push_back(Registry<Transform>::instance().get(name).make(params, model));
    } catch (const std::invalid_argument& e) {
      throw RecipeError(path + "[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return Compose(std::move(steps));
}

namespace {

// data.batch_transforms; the loss must take the probability targets they make.
// Multi-hot targets are mixed as they are: label smoothing, which timm applies to class indices
// only, would be silently ignored, so it is refused.
std::vector<std::shared_ptr<BatchTransform>> build_batch_transforms(YAML::Node list, const Loss& loss,
                                                                    const YAML::Node& loss_node, bool multilabel) {
  std::vector<std::shared_ptr<BatchTransform>> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string name = list[i].begin()->first.as<std::string>(), path = "data.batch_transforms[" + std::to_string(i) + "]";
    const YAML::Node smoothing = list[i].begin()->second["label_smoothing"];
    if (multilabel && smoothing && smoothing.IsScalar() && smoothing.as<double>() != 0.0)
      throw RecipeError(path + "." + name + ".label_smoothing: " + smoothing.Scalar() +
                        ", but train.task: multilabel mixes multi-hot targets as they are (timm smooths class "
                        "indices only); set it to 0");
    try {
      out.push_back(Registry<BatchTransform>::instance().get(name).make(Config(list[i].begin()->second, path + "." + name)));
    } catch (const std::invalid_argument& e) {
      throw RecipeError(path + ": " + e.what());
    }
    if (out.back()->makes_probabilities() && !loss.takes_probabilities())
      throw RecipeError("train.loss: " + loss_node["name"].as<std::string>() + " takes class indices, but " + path +
                        " (" + name + ") makes probability targets: use cross_entropy");
  }
  return out;
}

// train.activation_checkpointing against the stages the model has: `true` becomes all of them.
void resolve_activation_checkpointing(Job& job) {
  TrainConfig& t = job.config.train;
  const std::vector<std::string> stages = job.model->checkpoint_stages();
  const std::string key = "train.activation_checkpointing: ";
  if (t.checkpoint_every_stage && stages.empty())
    throw RecipeError(key + job.config.model + " has no stages to checkpoint; use false");
  if (t.checkpoint_every_stage) t.checkpoint_stages = stages;
  for (const auto& name : t.checkpoint_stages) {
    if (std::find(stages.begin(), stages.end(), name) != stages.end()) continue;
    if (stages.empty()) throw RecipeError(key + job.config.model + " has no stages to checkpoint; use false");
    std::string all;
    for (const auto& s : stages) all += (all.empty() ? "" : ", ") + s;
    throw RecipeError(key + "'" + name + "' is not a stage of " + job.config.model + did_you_mean(name, stages) +
                      "; its stages: " + all);
  }
}

// num_classes: auto where neither the data nor a labels.json names the classes (predict or
// export of a weights file alone): the output count of the classifier head in `weights`, found
// by the model's own classifier_pattern() on a probe built with one class.
int64_t head_outputs(Job& job, YAML::Node model_cfg, const TensorList& weights, const std::string& source) {
  model_cfg["num_classes"] = int64_t(1);
  std::shared_ptr<Classifier> probe;
  try {
    probe = Registry<Classifier>::instance().get(job.config.model).make(job.recipe.section("model"));
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model: ") + e.what());
  }
  const std::string pattern = probe->classifier_pattern();
  for (const auto& p : probe->named_parameters()) {
    if (p.value().dim() < 2 || ::fnmatch(pattern.c_str(), p.key().c_str(), 0) != 0) continue;
    for (const auto& [name, tensor] : weights)
      if (name == p.key() && tensor.dim() == p.value().dim()) return tensor.size(0);
  }
  throw RecipeError("model.num_classes: auto: no labels.json beside " + source + " and no classifier weight ('" +
                    pattern + "') in it to count the classes; give model.num_classes=N");
}

// The model (num_classes: auto from the data, or else from the weights that will replace it), its
// pretrained weights and the freeze rules.
void build_model(Job& job, const JobOptions& options) {
  YAML::Node model_cfg = job.recipe.root["model"];
  if (model_cfg["num_classes"] && model_cfg["num_classes"].Scalar() == "auto")
    model_cfg["num_classes"] = !job.data.classes.empty() ? int64_t(job.data.classes.size())
                               : options.weights ? head_outputs(job, model_cfg, *options.weights, options.weights_source)
                                                 : options.placeholder_classes;
  // Fewer outputs than classes fails only at the first batch holding a higher label (PyTorch's
  // "Target 9 is out of bounds"); more is allowed, as in a head with spare classes.
  const auto classes = int64_t(job.data.classes.size());
  if (classes > 0 && model_cfg["num_classes"].as<int64_t>() < classes)
    throw RecipeError("model.num_classes: " + model_cfg["num_classes"].as<std::string>() + " outputs for a dataset of " +
                      std::to_string(classes) + " classes (labels 0-" + std::to_string(classes - 1) +
                      "); use auto, or " + std::to_string(classes) + " or more");
  torch::manual_seed(job.config.seed);  // model init is seeded, on every rank alike
  try {
    job.model = Registry<Classifier>::instance().get(job.config.model).make(job.recipe.section("model"));
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model: ") + e.what());
  }
  resolve_eval_transforms(job, options);  // a bad config.json is reported before the weights download
  if (options.pretrained) load_pretrained(job, options);
  std::vector<int64_t> matched = apply_freeze_rules(*job.model, job.config.freeze);
  for (std::size_t i = 0; i < matched.size(); ++i)
    if (matched[i] == 0)
      job.notes.push_back("freeze[" + std::to_string(i) + "]: '" + job.config.freeze[i].params + "' matches no parameter");
  if (job.trainable_parameters() == 0) throw RecipeError("freeze: the rules leave no parameter trainable");
  resolve_activation_checkpointing(job);
}

// A classifier of one class learns nothing (its softmax is 1 whatever the input, so it reaches
// eval_accuracy 1.0); refused here, where every dataset's classes are known, naming where they
// came from: the classes listed, else the folder read.
void check_class_count(const Recipe& recipe, const std::vector<std::string>& classes) {
  if (classes.size() != 1) return;
  const Config dataset = recipe.section("data.dataset");
  const bool listed = dataset.has("classes") && !dataset.is_null("classes");
  const bool folder = !listed && dataset.has("root");
  const std::string key = listed ? "data.dataset.classes" : folder ? "data.dataset.root" : "data.dataset";
  throw DataError(recipe.key_at(key) + ": found 1 class" + (folder ? " in " + dataset.get<std::string>("root") : "") +
                  " ('" + classes[0] + "'); a classifier needs at least 2");
}

}  // namespace

DatasetSplits build_datasets(const Recipe& recipe, const DataConfig& data, bool download) {
  defer_dataset_downloads(!download);  // check: DownloadDeferred says what a run would fetch
  DatasetSplits splits;
  try {
    splits = Registry<Dataset>::instance().get(data.dataset).make(recipe.section("data.dataset"));
  } catch (const MissingDataFolder& e) {
    defer_dataset_downloads(false);
    throw MissingDataFolder(e.key, recipe.key_at("data.dataset." + e.key) + ": " + e.what());
  }
  defer_dataset_downloads(false);
  if (!splits.left_out.empty() && !data.skip_bad_files) throw DataError(splits.left_out.front());
  if (!splits.left_out.empty())
    spdlog::warn("data.dataset: {} row{} of its labels left out (data.on_bad_file: skip; error stops here): {}{}",
                 splits.left_out.size(), splits.left_out.size() == 1 ? "" : "s", splits.left_out.front(),
                 splits.left_out.size() > 1 ? fmt::format(" and {} more", splits.left_out.size() - 1) : "");
  check_class_count(recipe, splits.classes);
  splits.train = limit(splits.train, data.max_train_samples);
  splits.eval = limit(splits.eval, data.max_eval_samples);
  if (splits.train->size() == 0) throw DataError("data.dataset: the training split is empty");
  return splits;
}

void apply_folds(DatasetSplits& splits, const DataConfig& data, uint64_t seed) {
  if (!data.cv_folds) return;
  const int64_t k = *data.cv_folds;
  if (data.cv_fold >= k)
    throw RecipeError("data.cv_fold: " + std::to_string(data.cv_fold) + ": folds are 0 .. " + std::to_string(k - 1) +
                      " (data.cv_folds: " + std::to_string(k) + ")");
  if (streaming_source(*splits.train))
    throw RecipeError("data.cv_folds: the folds need a dataset read by index; WebDataset shards are read as streams");
  if (data.cv_stratified && splits.train->multilabel())
    throw RecipeError("data.cv_stratified: a multi-label dataset has no one class per example to stratify by; "
                      "use plain folds (cv_stratified: false)");
  const std::shared_ptr<const Dataset> all = splits.train;
  std::vector<int64_t> fold;
  try {
    if (data.cv_stratified) {
      std::vector<int64_t> labels(all->size());
      for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = all->label(i);
      fold = stratified_kfold_assignment(labels, k, uint32_t(seed));
    } else {
      fold = kfold_assignment(all->size(), k, uint32_t(seed));
    }
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("data.cv_folds: ") + e.what());
  }
  std::vector<std::size_t> train, held_out;
  for (std::size_t i = 0; i < fold.size(); ++i) (fold[i] == data.cv_fold ? held_out : train).push_back(i);
  splits.train = std::make_shared<IndexSubset>(all, std::move(train));
  splits.eval = std::make_shared<IndexSubset>(all, std::move(held_out));
  splits.eval_split_name = "fold-" + std::to_string(data.cv_fold);
}

Job build_job(Recipe recipe, const JobOptions& options) {
  Job job;
  job.recipe = std::move(recipe);
  job.fingerprint = recipe_fingerprint(job.recipe.root);
  YAML::Node root = job.recipe.root;
  job.resolved = resolve_auto_values(root);
  job.config = RunConfig::from(root);
  job.threads = job.config.world.threads_per_proc;
  job.device = resolve_device(job.config.world.device);
  resolve_precision(job);
  if (job.config.world.backend == "nccl" && job.device != "cuda")
    throw RecipeError("world.backend: nccl needs CUDA devices (this run is on " + job.device + "); use gloo");
  // A CUDA LibTorch built without NCCL would otherwise fail only when the ranks meet, after starting.
  if (job.config.world.backend == "nccl" && !has_nccl())
    throw RecipeError("world.backend: nccl: this LibTorch was built without NCCL (USE_C10D_NCCL); use gloo");

  if (options.data) {
    job.data = build_datasets(job.recipe, job.config.data, options.download);
    apply_folds(job.data, job.config.data, job.config.seed);
  } else {
    job.data.classes = options.classes;
  }
  build_model(job, options);
  resolve_memory_format(job);
  for (auto& v : write_resolved_choices(job)) job.resolved.push_back(v);
  const InputConfig input = job.model->input_config();
  const ModelInput model{input.mean, input.std};
  job.train_transforms = build_transforms(root["data"]["train_transforms"], model, "data.train_transforms");
  if (!job.eval_transforms_pending)
    job.eval_transforms = build_transforms(root["data"]["eval_transforms"], model, "data.eval_transforms");
  resolve_class_balance(job, options.data);
  try {
    job.loss = Registry<Loss>::instance().get(root["train"]["loss"]["name"].as<std::string>()).make(job.recipe.section("train.loss"));
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
  const bool multilabel = job.config.train.task == "multilabel";
  // (bce_with_logits trains single-label runs too, as timm's --bce-loss: class indices become one-hot rows.)
  if (multilabel && !job.loss->multilabel())
    throw RecipeError("train.loss: " + root["train"]["loss"]["name"].as<std::string>() +
                      " is a softmax loss, but train.task is multilabel (use bce_with_logits or asymmetric)");
  job.batch_transforms =
      build_batch_transforms(root["data"]["batch_transforms"], *job.loss, root["train"]["loss"], multilabel);
  return job;
}

std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job) { return build_optimizer(job, job.trainable()); }

std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job, const NamedParameters& params) {
  const auto& entry = Registry<torch::optim::Optimizer>::instance().get(job.recipe.root["optimizer"]["name"].as<std::string>());
  try {
    return entry.make(job.recipe.section("optimizer"), job_param_groups(job, params));
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
}

std::shared_ptr<Scheduler> build_scheduler(const Job& job, torch::optim::Optimizer& optimizer, int64_t total_steps,
                                           int64_t steps_per_epoch) {
  const auto& entry = Registry<Scheduler>::instance().get(job.recipe.root["scheduler"]["name"].as<std::string>());
  try {
    const YAML::Node lr_node = job.recipe.root["optimizer"]["lr"];  // a plugin's optimizer may have none
    const double lr = lr_node && lr_node.IsScalar() ? lr_node.as<double>() : 0.0;
    auto s = entry.make(job.recipe.section("scheduler"), ScheduleContext{&optimizer, total_steps, steps_per_epoch, lr});
    if (s->observes_evaluations() && job.config.train.eval_every == "never")
      throw std::invalid_argument("scheduler.name: " + job.recipe.root["scheduler"]["name"].as<std::string>() +
                                  " decides after each evaluation, and train.eval_every is never");
    s->set_steps_done(0);
    return s;
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
}

}  // namespace trainrun
