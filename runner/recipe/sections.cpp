// The built-in recipe sections' schemas (top level, data, train, output, world, freeze rules):
// one declaration drives validation, defaults and `describe recipe/...`.
#include "runner/recipe/recipe.h"

#include <map>

namespace trainrun {

namespace {

using YAML::Node;

Node map_of(std::initializer_list<std::pair<const char*, Node>> items) {
  Node n(YAML::NodeType::Map);
  for (auto& [k, v] : items) n[k] = v;
  return n;
}

// The top level: what a recipe is made of.
Schema top_level_schema() {
  return Schema()
      .add("name", Type::String, Node(), "run name; default: the recipe file's stem")
      .add("seed", Type::Int, yaml("42"), "seeds model init, shuffling, augmentation and dropout").min(0)
      .required("model", Type::Map, "the model: `name` from `trainrun list models` + its parameters")
      .required("data", Type::Map, "dataset, transforms and batch sizes")
      .add("optimizer", Type::Map, map_of({{"name", Node("adamw")}}), "`name` from `trainrun list optimizers` + its parameters")
      .add("scheduler", Type::Map, map_of({{"name", Node("constant")}}), "`name` from `trainrun list schedulers` + its parameters")
      .add("precision", Type::String, Node("fp32"), "fp32 | bf16 (autocast) | fp16 (CUDA only) | auto (fp16 on CUDA; bf16 on a CPU with bf16 units, else fp32)")
      .choices({"fp32", "bf16", "fp16", "auto"})
      .add("memory_format", Type::String, Node("auto"),
           "contiguous | channels_last (NHWC activations and conv weights, as model.to(memory_format=torch.channels_last)) | "
           "auto (channels_last for convolutional nets where oneDNN or CUDA runs them faster)")
      .choices({"auto", "contiguous", "channels_last"})
      .add("freeze", Type::List, Node(YAML::NodeType::Sequence),
           "ordered rules {params: GLOB, trainable: BOOL}; last match wins")
      .add("train", Type::Map, Node(YAML::NodeType::Map), "the training loop")
      .add("output", Type::Map, Node(YAML::NodeType::Map), "what the run writes")
      .add("world", Type::Map, Node(YAML::NodeType::Map), "processes, threads and device")
      .add("callbacks", Type::List, Node(YAML::NodeType::Sequence),
           "callbacks added to the built-in ones, each `name` from `trainrun list callbacks` + its parameters")
      .add("plugins", Type::StringList, Node(YAML::NodeType::Sequence),
           "shared libraries loaded before the recipe is checked; their components register themselves");
}

// data: the dataset, its transforms and the batch sizes.
Schema data_schema() {
  return Schema()
      .required("dataset", Type::Map, "`name` from `trainrun list datasets` + its parameters")
      .add("train_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
           "transforms for training examples, in order")
      .add("eval_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
           "transforms for evaluation examples, in order")
      .add("batch_transforms", Type::List, Node(YAML::NodeType::Sequence),
           "transforms of each collated training batch, in order, on the loader's threads "
           "(`trainrun list batch_transforms`: mixup); evaluation batches are left as they are")
      .add("batch_size", Type::Int, yaml("64"), "examples per batch per process").min(1)
      .add("eval_batch_size", Type::Int, Node(), "evaluation batch per process; null = batch_size").min(1)
      .add("workers", Type::Int, yaml("2"), "decode/augment threads per process (0 = in the training thread)").min(0)
      .add("on_bad_file", Type::String, Node("skip"),
           "an image that does not decode: skip (left out of its batch, with a warning) | error (stop)")
      .choices({"skip", "error"})
      .add("max_train_samples", Type::Int, Node(), "use only the first N training examples").min(1)
      .add("max_eval_samples", Type::Int, Node(), "use only the first N evaluation examples").min(1);
}

// train: the training loop.
Schema train_schema() {
  return Schema()
      .add("epochs", Type::Int, yaml("1"), "passes over the training set").min(1)
      .add("loss", Type::Map, map_of({{"name", Node("cross_entropy")}}),
           "`name` from `trainrun list losses` (or just the name) + its parameters")
      .scalar_ok()
      .add("grad_accum_steps", Type::Int, yaml("1"), "micro-batches per optimizer step (no DDP sync between)").min(1)
      .add("max_grad_norm", Type::Float, Node(), "clip the global L2 norm of the gradients; null = no clipping")
      .above(0)
      .add("bn_eval", Type::Bool, yaml("false"),
           "frozen BatchNorm layers stay in eval mode: running statistics do not update")
      .add("unfreeze_at_epoch", Type::Int, Node(),
           "from this epoch on (counting from 0) every parameter trains, as fastai's fine_tune(freeze_epochs=N)")
      .min(1)
      .add("log_every_steps", Type::Int, yaml("10"), "log the mean training loss every N optimizer steps").min(1)
      .add("eval_every", Type::Int, Node("epoch"), "evaluate every `epoch`, every N optimizer steps, or `never`")
      .min(1).choices({"epoch", "never"})
      .add("metrics", Type::StringList, Node(std::vector<std::string>{"accuracy"}), "evaluation metrics")
      .choices({"accuracy", "top5"});
}

// output: the run folder and its checkpoints.
Schema output_schema() {
  return Schema()
      .add("dir", Type::Path, Node("runs/${name}"), "run folder")
      .add("save_every", Type::Int, Node("epoch"),
           "write checkpoint-<step>/ every `epoch`, every N optimizer steps, or `never` "
           "(also at the end and on SIGINT/SIGTERM unless never)")
      .min(1).choices({"epoch", "never"})
      .add("keep_last", Type::Int, yaml("3"),
           "keep the newest N checkpoints (plus the best and the one resumed from); null = keep all")
      .min(1).nullable()
      .add("best_metric", Type::String, Node("eval_loss"),
           "evaluation metric that picks checkpoint-best (losses: lower is better); null = none")
      .choices({"eval_loss", "eval_accuracy", "eval_top5", "loss", "accuracy", "top5"}).nullable()
      .add("resume", Type::Path, Node("auto"),
           "auto (newest complete checkpoint in dir, else a fresh start) | never | PATH of a checkpoint folder");
}

// world: processes, threads and device.
Schema world_schema() {
  return Schema()
      .add("nproc_per_node", Type::Int, yaml("1"),
           "worker processes on this node (torchrun --nproc_per_node); auto = one per GPU on CUDA, one on a CPU")
      .min(1).choices({"auto"})
      .add("nnodes", Type::Int, yaml("1"), "nodes in the world; run the same command on each").min(1)
      .add("node_rank", Type::Int, yaml("0"), "this node's index, 0 .. nnodes-1").min(0)
      .add("master_addr", Type::String, yaml("127.0.0.1"), "address of node 0, where rank 0 hosts the rendezvous")
      .add("master_port", Type::Int, yaml("29500"), "rendezvous port on node 0; 0 = any free port (one node only)")
      .range(0, 65535)
      .add("init_method", Type::String, yaml("env"),
           "env (TCPStore at master_addr:master_port) | file:///shared/path (FileStore)")
      .add("backend", Type::String, yaml("auto"), "gloo | nccl | auto (nccl on CUDA, gloo on CPU)")
      .choices({"gloo", "nccl", "auto"})
      .add("timeout_s", Type::Float, yaml("60"), "process-group timeout: a dead rank stops the others within it")
      .above(0)
      .add("max_restarts", Type::Int, yaml("0"), "relaunch the whole world this many times after a failure").min(0)
      .add("device", Type::String, Node("auto"), "cpu | cuda | auto (cuda when available)")
      .choices({"cpu", "cuda", "auto"})
      .add("threads_per_proc", Type::Int, Node("auto"), "intra-op threads; auto = usable CPUs / local processes")
      .min(1).choices({"auto"});
}

// One `freeze:` rule.
Schema freeze_rule_schema() {
  return Schema()
      .required("params", Type::String, "glob over parameter names (`*`, `fc.*`, `layer4.*`)")
      .required("trainable", Type::Bool, "whether the matching parameters train")
      .add("from_epoch", Type::Int, yaml("0"),
           "the rule applies from this epoch on (counting from 0): gradual unfreezing")
      .min(0);
}

std::map<std::string, Schema> make_sections() {
  std::map<std::string, Schema> s;
  s[""] = top_level_schema();
  s["data"] = data_schema();
  s["train"] = train_schema();
  s["output"] = output_schema();
  s["world"] = world_schema();
  s["freeze[]"] = freeze_rule_schema();
  return s;
}

const std::map<std::string, Schema>& sections() {
  static const auto s = make_sections();
  return s;
}

}  // namespace

const Schema& section_schema(const std::string& section) { return sections().at(section); }

std::vector<std::string> section_names() {
  std::vector<std::string> out;
  for (auto& [k, _] : sections())
    if (!k.empty() && k.back() != ']') out.push_back(k);
  return out;
}

}  // namespace trainrun
