// The built-in recipe sections (top level, data, train, output, freeze rules; world's is in
// runner/distributed/world_config.cpp), each key declared once: its schema drives validation,
// defaults and `describe recipe/...`, and the same declaration reads the validated section into
// its struct (run_config.h). What the structs derive from a key (eval_steps, eval_batch_size's
// null, best_metric's prefix) is computed in its reader, here.
#include "runner/recipe/recipe.h"
#include "runner/recipe/run_config.h"

#include "registry/section_spec.h"
#include "support/hub_upload.h"
#include "runner/logging/multilabel_metrics.h"
#include "components/optim/optim.h"

#include <algorithm>

namespace trainrun {

namespace {

using YAML::Node;

Node map_of(std::initializer_list<std::pair<const char*, Node>> items) {
  Node n(YAML::NodeType::Map);
  for (auto& [k, v] : items) n[k] = v;
  return n;
}

std::string name_of(const Node& component) { return component["name"].as<std::string>(); }

// `epoch`, `never` or N: N, else 0.
int64_t steps_of(const std::string& every) { return every == "epoch" || every == "never" ? 0 : std::stoll(every); }

// data: the dataset, its transforms and the batch sizes.
SectionSpec<DataConfig> declare_data() {
  using D = DataConfig;
  return SectionSpec<D>()
      .required("dataset", Type::Map, "`name` from `trainrun list datasets` + its parameters",
                [](D& d, const Node& v) { d.dataset = name_of(v); })
      .key("train_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
           "transforms for training examples, in order")
      .key("eval_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
           "transforms for evaluation examples, in order; or `model`: the pretrained weights' own (timm's "
           "resolve_data_config + create_transform(is_training=False) from their config.json's pretrained_cfg, "
           "else the model's default: resize to input_size / crop_pct, center_crop, to_tensor, normalize)")
      .choices({"model"})
      .key("batch_transforms", Type::List, Node(YAML::NodeType::Sequence),
           "transforms of each collated training batch, in order, on the loader's threads "
           "(`trainrun list batch_transforms`: mixup); evaluation batches are left as they are")
      .key("mixup", Type::Map, Node(),
           "timm's Mixup/CutMix: `trainrun describe batch_transforms/mixup`'s keys; the resolved recipe "
           "writes it as the first of batch_transforms")
      .key("batch_size", &D::batch_size, Type::Int, yaml("64"), "examples per batch per process").min(1)
      .key("global_batch_size", &D::global_batch_size, Type::Int, Node(),
           "examples per optimizer step over all processes: train.grad_accum_steps becomes it / (batch_size x "
           "processes), so a run resumed on another number of processes keeps its steps, schedule and lr; "
           "null = batch_size x processes x train.grad_accum_steps")
      .min(1).nullable()
      .key("eval_batch_size", Type::Int, Node(), "evaluation batch per process; null = batch_size",
           [](D& d, const Node& v) { d.eval_batch_size = v.IsNull() ? d.batch_size : v.as<int64_t>(); })
      .min(1)
      .key("workers", &D::workers, Type::Int, yaml("2"), "decode/augment threads per process (0 = in the training thread)")
      .min(0)
      .key("on_bad_file", Type::String, Node("skip"),
           "an image that does not decode, or a bad row of a labels file (image_csv): skip (left out, with a "
           "warning) | error (stop)",
           [](D& d, const Node& v) { d.skip_bad_files = v.as<std::string>() == "skip"; })
      .choices({"skip", "error"})
      .key("sampler", &D::sampler, Type::String, Node("random"),
           "training order: random (a permutation per epoch, as DistributedSampler) | weighted (len(train) draws "
           "with replacement, each example weighted 1 / its class's count, as WeightedRandomSampler; "
           "classes come out equally often)")
      .choices({"random", "weighted"})
      .key("synthetic", &D::synthetic, Type::Bool, yaml("false"),
           "true: every training step trains on the run's first batch again, loaded once and held on the device, "
           "so the steps run without the data path (reading, decoding, augmenting, copying), as timm's benchmark.py "
           "times a model; for measuring speed (bench/compare's input ratio), not for training. The epochs keep "
           "their number of steps; evaluation reads its split as usual")
      .key("max_train_samples", &D::max_train_samples, Type::Int, Node(), "use only the first N training examples")
      .min(1)
      .key("max_eval_samples", &D::max_eval_samples, Type::Int, Node(), "use only the first N evaluation examples")
      .min(1)
      .key("cv_folds", &D::cv_folds, Type::Int, Node(),
           "k-fold cross-validation (`trainrun cv` sets it): the training split cut into K folds, scikit-learn's "
           "KFold(shuffle=True, random_state=seed); the run trains on all but fold cv_fold and evaluates on it "
           "(the recipe's eval split is not used); null = no folds")
      .min(2)
      .key("cv_fold", &D::cv_fold, Type::Int, yaml("0"), "with cv_folds: the fold this run evaluates on, 0 .. K-1")
      .min(0)
      .key("cv_stratified", &D::cv_stratified, Type::Bool, yaml("false"),
           "with cv_folds: StratifiedKFold(shuffle=True, random_state=seed): each fold keeps the classes' proportions");
}

const SectionSpec<EmaOptions>& ema_section();
const SectionSpec<PushToHubOptions>& push_to_hub_section();

// train: the training loop.
SectionSpec<TrainConfig> declare_train() {
  using T = TrainConfig;
  return SectionSpec<T>()
      .key("epochs", &T::epochs, Type::Int, yaml("1"), "passes over the training set").min(1)
      .key("loss", Type::Map, map_of({{"name", Node("cross_entropy")}}),
           "`name` from `trainrun list losses` (or just the name) + its parameters")
      .scalar_ok()
      .key("grad_accum_steps", &T::grad_accum_steps, Type::Int, yaml("1"),
           "micro-batches per optimizer step (no DDP sync between)")
      .min(1)
      .key("max_grad_norm", Type::Float, Node(), "clip the global L2 norm of the gradients; null = no clipping",
           [](T& t, const Node& v) { t.max_grad_norm = v.IsNull() ? 0.0 : v.as<double>(); })
      .above(0)
      .key("bn_eval", &T::bn_eval, Type::Bool, yaml("false"),
           "frozen BatchNorm layers stay in eval mode: running statistics do not update")
      .key("unfreeze_at_epoch", &T::unfreeze_at_epoch, Type::Int, Node(),
           "from this epoch on (counting from 0) every parameter trains, as fastai's fine_tune(freeze_epochs=N)")
      .min(1)
      .key("log_every_steps", &T::log_every_steps, Type::Int, yaml("10"),
           "log the mean training loss every N optimizer steps")
      .min(1)
      .key("eval_every", Type::Int, Node("epoch"), "evaluate every `epoch`, every N optimizer steps, or `never`",
           [](T& t, const Node& v) {
             t.eval_every = v.as<std::string>();
             t.eval_steps = steps_of(t.eval_every);
           })
      .min(1).choices({"epoch", "never"})
      .key("task", &T::task, Type::String, Node("single_label"),
           "single_label: one class per image (softmax); multilabel: a set of classes per image, one sigmoid "
           "per class (a multi-label dataset and a loss such as bce_with_logits)")
      .choices({"single_label", "multilabel"})
      .key("metrics", &T::metrics, Type::StringList, Node(std::vector<std::string>{"accuracy"}),
           "evaluation metrics; single_label: accuracy, top5, f1_macro, balanced_accuracy (sklearn's); multilabel: "
           "accuracy (every label right), map, map_micro, f1_macro, f1_micro, f1_samples, precision, recall (macro, at "
           "train.threshold); either: per_class (each evaluation prints its per-class table)")
      .choices([] {
        std::vector<std::string> out = task_metric_names();
        out.push_back(kPerClassMetric);
        return out;
      }())
      .key("threshold", &T::threshold, Type::Float, yaml("0.5"),
           "multilabel: a class is predicted where its sigmoid is above this (F1, precision, recall, accuracy)")
      .range(0, 1)
      .key("ema", Type::Map, Node(),
           "an exponential moving average of the weights, timm's ModelEmaV3 (`describe recipe/train.ema`); "
           "evaluated beside the weights as eval_ema_*, saved as model_ema.safetensors; null = none",
           [](T& t, const Node& v) {
             if (!v.IsNull()) t.ema = ema_section().read(v);
           })
      .nullable()
      .key("activation_checkpointing", Type::List, yaml("false"),
           "recompute these stages' activations in backward instead of keeping them, each residual block on "
           "its own (torch.utils.checkpoint per block, as timm's set_grad_checkpointing): less memory for one "
           "more forward of those blocks. true = every stage the model has (resnets: layer1, layer2, layer3, "
           "layer4; not the stem or the head), a list = those stages, false = none",
           [](T& t, const Node& v) {
             t.checkpoint_every_stage = v.IsScalar() && v.Scalar() == "true";
             t.checkpoint_stages.clear();
             if (v.IsSequence())
               for (const auto& stage : v) t.checkpoint_stages.push_back(stage.IsScalar() ? stage.Scalar() : YAML::Dump(stage));
           })
      .choices({"true", "false"});
}

// train.ema: timm's ModelEmaV3 arguments (decay, min_decay, use_warmup, warmup_gamma,
// warmup_power) and how often it updates.
SectionSpec<EmaOptions> declare_ema() {
  using E = EmaOptions;
  return SectionSpec<E>()
      .key("decay", &E::decay, Type::Float, yaml("0.9998"),
           "EMA decay: ema = decay * ema + (1 - decay) * weights (timm train.py's --model-ema-decay default)")
      .range(0, 1)
      .key("min_decay", &E::min_decay, Type::Float, yaml("0.0"), "with warmup: the lowest decay (timm's min_decay)")
      .range(0, 1)
      .key("warmup", &E::warmup, Type::Bool, yaml("false"),
           "decay warm-up 1 - (1 + step / warmup_gamma) ** -warmup_power, capped at decay (timm's use_warmup)")
      .key("warmup_gamma", &E::warmup_gamma, Type::Float, yaml("1.0"), "timm's warmup_gamma").above(0)
      .key("warmup_power", &E::warmup_power, Type::Float, yaml("0.6666666666666666"), "timm's warmup_power").above(0)
      .key("every_n_steps", &E::every_n_steps, Type::Int, yaml("1"),
           "update after every N-th optimizer step (with the step count, so warm-up follows the steps)")
      .min(1);
}

const SectionSpec<EmaOptions>& ema_section() {
  static const auto spec = declare_ema();
  return spec;
}

// output: the run folder and its checkpoints.
SectionSpec<CheckpointOptions> declare_output() {
  using O = CheckpointOptions;
  return SectionSpec<O>()
      .key("dir", &O::dir, Type::Path, Node("runs/${name}"), "run folder")
      .key("save_every", &O::save_every, Type::Int, Node("epoch"),
           "write checkpoint-<step>/ every `epoch`, every N optimizer steps, or `never` "
           "(also at the end and on SIGINT/SIGTERM unless never)")
      .min(1).choices({"epoch", "never"})
      .key("keep_last", &O::keep_last, Type::Int, yaml("3"),
           "keep the newest N checkpoints (plus the best and the one resumed from); null = keep all")
      .min(1).nullable()
      .key("best_metric", Type::String, Node("eval_loss"),
           "evaluation metric that picks checkpoint-best (losses: lower is better); null = none",
           [](O& o, const Node& v) {
             if (v.IsNull()) return;
             o.best_metric = evaluation_metric_name(v.as<std::string>());
             o.greater_is_better = o.best_metric.find("loss") == std::string::npos;
           })
      .choices(evaluation_metric_choices()).nullable()
      .key("metric_for_best_model", Type::String, Node(),
           "transformers' name for best_metric (one of the two, or both alike); null = best_metric's",
           [](O& o, const Node& v) {
             if (v.IsNull()) return;
             const std::string m = evaluation_metric_name(v.as<std::string>());
             if (o.best_metric != "eval_loss" && o.best_metric != m)
               throw RecipeError("output.metric_for_best_model: " + m + " and output.best_metric: " + o.best_metric +
                                 " name different metrics; give one");
             o.best_metric = m;
             o.greater_is_better = m.find("loss") == std::string::npos;
           })
      .choices(evaluation_metric_choices()).nullable()
      .key("greater_is_better", Type::Bool, Node(),
           "whether a higher best metric is better; null = inferred from its name (losses lower), as transformers",
           [](O& o, const Node& v) {
             if (!v.IsNull()) o.greater_is_better = v.as<bool>();
           })
      .nullable()
      .key("load_best_model_at_end", &O::load_best_model_at_end, Type::Bool, yaml("false"),
           "the run's final model.safetensors is checkpoint-best's (its EMA weights when the metric is eval_ema_*), "
           "as transformers' load_best_model_at_end")
      .key("resume", &O::resume, Type::Path, Node("auto"),
           "auto (newest complete checkpoint in dir, else a fresh start) | never | PATH of a checkpoint folder")
      .key("push_to_hub", Type::Map, Node(),
           "push the model to a Hugging Face Hub repository as the run goes, as the Trainer's push_to_hub "
           "(`describe recipe/output.push_to_hub`); null = no push",
           [](O& o, const Node& v) {
             if (!v.IsNull()) o.push_to_hub = push_to_hub_section().read(v);
           })
      .nullable();
}

// output.push_to_hub: the Trainer's hub_model_id, hub_strategy, hub_private_repo, hub_revision.
SectionSpec<PushToHubOptions> declare_push_to_hub() {
  using P = PushToHubOptions;
  return SectionSpec<P>()
      .required("repo", &P::repo, Type::String, "ORG/NAME, created if missing (HF_TOKEN: a token with write access)")
      .key("strategy", &P::strategy, Type::String, Node("every_save"),
           "end: the final model once the run is over; every_save: also each checkpoint as it is saved, off the "
           "training thread (one push at a time: a save while one is running is not pushed); checkpoint: "
           "every_save plus the checkpoint's own files in last-checkpoint/ (the Trainer's hub_strategy)")
      .choices({"end", "every_save", "checkpoint"})
      .key("private", &P::private_repo, Type::Bool, yaml("false"), "a repository the push creates is private")
      .key("revision", &P::revision, Type::String, Node("main"), "the branch pushed to, created from main if missing");
}

const SectionSpec<PushToHubOptions>& push_to_hub_section() {
  static const auto spec = declare_push_to_hub();
  return spec;
}

// One `freeze:` rule.
SectionSpec<FreezeRule> declare_freeze_rule() {
  using F = FreezeRule;
  return SectionSpec<F>()
      .required("params", &F::params, Type::String, "glob over parameter names (`*`, `fc.*`, `layer4.*`)")
      .required("trainable", &F::trainable, Type::Bool, "whether the matching parameters train")
      .key("from_epoch", &F::from_epoch, Type::Int, yaml("0"),
           "the rule applies from this epoch on (counting from 0): gradual unfreezing")
      .min(0)
      .key("lr_scale", &F::lr_scale, Type::Float, yaml("1.0"),
           "factor on the lr of the parameters this rule makes trainable (their optimizer group's lr_scale), "
           "e.g. a backbone unfrozen at a tenth of the head's lr")
      .above(0);
}

const SectionSpec<DataConfig>& data_section() {
  static const auto spec = declare_data();
  return spec;
}
const SectionSpec<TrainConfig>& train_section() {
  static const auto spec = declare_train();
  return spec;
}
const SectionSpec<CheckpointOptions>& output_section() {
  static const auto spec = declare_output();
  return spec;
}
const SectionSpec<FreezeRule>& freeze_rule_section() {
  static const auto spec = declare_freeze_rule();
  return spec;
}

// A reader that reads a whole section into `member` with `spec`.
template <class S>
SectionSpec<RunConfig>::Reader section(S RunConfig::*member, const SectionSpec<S>& spec) {
  return [member, &spec](RunConfig& c, const Node& v) { c.*member = spec.read(v); };
}

// The top level: what a recipe is made of. A component's section is checked against its
// registered schema and built by the job; the typed view keeps its name.
SectionSpec<RunConfig> declare_top_level() {
  using R = RunConfig;
  return SectionSpec<R>()
      .key("base", Type::StringList, Node(),
           "recipe file(s) this one builds on (relative to this file), merged in order, then this file's keys: "
           "mappings key by key, lists and values replaced (OmegaConf.merge); the resolved recipe has them merged in")
      .scalar_ok()
      .nullable()
      .key("name", &R::name, Type::String, Node(), "run name; default: the recipe file's stem (a base's name is inherited)")
      .key("seed", &R::seed, Type::Int, yaml("42"), "seeds model init, shuffling, augmentation and dropout").min(0)
      .required("model", Type::Map, "the model: `name` from `trainrun list models` + its parameters",
                [](R& c, const Node& v) { c.model = name_of(v); })
      .required("data", Type::Map, "dataset, transforms and batch sizes", section(&R::data, data_section()))
      .key("optimizer", Type::Map, map_of({{"name", Node("adamw")}}),
           "`name` from `trainrun list optimizers` + its parameters",
           [](R& c, const Node& v) { c.optimizer = name_of(v); })
      .key("scheduler", Type::Map, map_of({{"name", Node("constant")}}),
           "`name` from `trainrun list schedulers` + its parameters",
           [](R& c, const Node& v) { c.scheduler = name_of(v); })
      .key("precision", &R::precision, Type::String, Node("fp32"),
           "fp32 | bf16 (autocast) | fp16 (CUDA only) | auto (fp16 on CUDA; bf16 on a CPU with bf16 units, else fp32)")
      .choices({"fp32", "bf16", "fp16", "auto"})
      .key("memory_format", &R::memory_format, Type::String, Node("auto"),
           "contiguous | channels_last (NHWC activations and conv weights, as model.to(memory_format=torch.channels_last)) | "
           "auto (channels_last for convolutional nets where oneDNN or CUDA runs them faster)")
      .choices({"auto", "contiguous", "channels_last"})
      .key("freeze", Type::List, Node(YAML::NodeType::Sequence),
           "ordered rules {params: GLOB, trainable: BOOL}; last match wins",
           [](R& c, const Node& rules) {
             for (const auto& rule : rules) c.freeze.push_back(freeze_rule_section().read(rule));
           })
      .key("train", Type::Map, Node(YAML::NodeType::Map), "the training loop", section(&R::train, train_section()))
      .key("output", Type::Map, Node(YAML::NodeType::Map), "what the run writes", section(&R::output, output_section()))
      .key("world", Type::Map, Node(YAML::NodeType::Map), "processes, threads and device", section(&R::world, world_section()))
      .key("callbacks", Type::List, Node(YAML::NodeType::Sequence),
           "callbacks added to the built-in ones, each `name` from `trainrun list callbacks` + its parameters",
           [](R& c, const Node& list) {
             for (std::size_t i = 0; i < list.size(); ++i)
               c.callbacks.push_back({name_of(list[i]), Config(list[i], "callbacks[" + std::to_string(i) + "]")});
           })
      .key("plugins", Type::StringList, Node(YAML::NodeType::Sequence),
           "shared libraries loaded before the recipe is checked; their components register themselves");
}

const SectionSpec<RunConfig>& top_level_section() {
  static const auto spec = declare_top_level();
  return spec;
}

// The sections `describe recipe/...` and the loader know, in the order a recipe reads.
const std::vector<std::pair<std::string, const Schema*>>& sections() {
  static const std::vector<std::pair<std::string, const Schema*>> all = {
      {"", &top_level_section().schema()},       {"data", &data_section().schema()},
      {"train", &train_section().schema()},      {"output", &output_section().schema()},
      {"world", &world_section().schema()},      {"freeze[]", &freeze_rule_section().schema()},
      {"train.ema", &ema_section().schema()},    {"output.push_to_hub", &push_to_hub_section().schema()},
      {"optimizer.groups[]", &param_group_rule_schema()},
  };
  return all;
}

}  // namespace

const Schema& section_schema(const std::string& section) {
  for (const auto& [name, schema] : sections())
    if (name == section) return *schema;
  throw std::out_of_range("no recipe section '" + section + "'");
}

std::vector<std::string> section_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : sections())
    if (!name.empty() && name.back() != ']') out.push_back(name);
  return out;
}

RunConfig RunConfig::from(const YAML::Node& root) {
  RunConfig c = top_level_section().read(root);
  // train.unfreeze_at_epoch: E is the last freeze rule {"*", true, E}.
  if (c.train.unfreeze_at_epoch) c.freeze.push_back({"*", true, *c.train.unfreeze_at_epoch});
  if (c.output.load_best_model_at_end) {
    std::string missing = c.output.best_metric.empty() ? "output.best_metric (or metric_for_best_model) is null"
                          : !c.output.enabled()        ? "output.save_every is never"
                          : c.train.eval_every == "never" ? "train.eval_every is never"
                                                          : "";
    if (!missing.empty())
      throw RecipeError("output.load_best_model_at_end: needs evaluated checkpoints to choose from, but " + missing);
  }
  if (std::string why = unevaluated_metric(c.train, c.output.best_metric); !why.empty())
    throw RecipeError("output.best_metric: " + why);
  for (const std::string& m : c.train.metrics)
    if (std::string why = metric_task_mismatch(c.train.task, m); !why.empty()) throw RecipeError("train.metrics: " + why);
  if (c.output.push_to_hub) {
    const std::string& repo = c.output.push_to_hub->repo;
    if (!is_repo_id(repo)) throw RecipeError("output.push_to_hub.repo: " + repo + ": expected ORG/NAME");
  }
  return c;
}

}  // namespace trainrun
