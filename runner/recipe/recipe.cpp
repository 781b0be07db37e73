#include "runner/recipe/recipe.h"

#include "components/data/dataset.h"
#include "components/data/transform.h"
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "registry/registry.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using YAML::Node;

Node map_of(std::initializer_list<std::pair<const char*, Node>> items) {
  Node n(YAML::NodeType::Map);
  for (auto& [k, v] : items) n[k] = v;
  return n;
}

std::map<std::string, Schema> make_sections() {
  std::map<std::string, Schema> s;
  s[""] = Schema()
              .add("name", Type::String, Node(), "run name; default: the recipe file's stem")
              .add("seed", Type::Int, yaml("42"), "seeds model init, shuffling, augmentation and dropout").min(0)
              .required("model", Type::Map, "the model: `name` from `trainrun list models` + its parameters")
              .required("data", Type::Map, "dataset, transforms and batch sizes")
              .add("optimizer", Type::Map, map_of({{"name", Node("adamw")}}), "`name` from `trainrun list optimizers` + its parameters")
              .add("scheduler", Type::Map, map_of({{"name", Node("constant")}}), "`name` from `trainrun list schedulers` + its parameters")
              .add("precision", Type::String, Node("fp32"), "fp32 | bf16 (autocast) | fp16 (CUDA only) | auto (bf16 on CUDA, else fp32)")
              .choices({"fp32", "bf16", "fp16", "auto"})
              .add("freeze", Type::List, Node(YAML::NodeType::Sequence),
                   "ordered rules {params: GLOB, trainable: BOOL}; last match wins")
              .add("train", Type::Map, Node(YAML::NodeType::Map), "the training loop")
              .add("output", Type::Map, Node(YAML::NodeType::Map), "what the run writes")
              .add("world", Type::Map, Node(YAML::NodeType::Map), "processes, threads and device");
  s["data"] = Schema()
                  .required("dataset", Type::Map, "`name` from `trainrun list datasets` + its parameters")
                  .add("train_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
                       "transforms for training examples, in order")
                  .add("eval_transforms", Type::List, Node(std::vector<std::string>{"to_tensor", "normalize"}),
                       "transforms for evaluation examples, in order")
                  .add("batch_size", Type::Int, yaml("64"), "examples per batch per process").min(1)
                  .add("eval_batch_size", Type::Int, Node(), "evaluation batch per process; null = batch_size").min(1)
                  .add("workers", Type::Int, yaml("2"), "decode/augment threads per process (0 = in the training thread)").min(0)
                  .add("on_bad_file", Type::String, Node("skip"),
                       "an image that does not decode: skip (left out of its batch, with a warning) | error (stop)")
                  .choices({"skip", "error"})
                  .add("max_train_samples", Type::Int, Node(), "use only the first N training examples").min(1)
                  .add("max_eval_samples", Type::Int, Node(), "use only the first N evaluation examples").min(1);
  s["train"] = Schema()
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
  s["output"] = Schema()
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
  s["world"] = Schema()
                   .add("nproc_per_node", Type::Int, yaml("1"), "worker processes on this node (torchrun --nproc_per_node)").min(1)
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
                   .add("threads_per_proc", Type::Int, Node("auto"), "intra-op threads; auto = cores / local processes")
                   .min(1).choices({"auto"});
  s["freeze[]"] = Schema()
                      .required("params", Type::String, "glob over parameter names (`*`, `fc.*`, `layer4.*`)")
                      .required("trainable", Type::Bool, "whether the matching parameters train")
                      .add("from_epoch", Type::Int, yaml("0"),
                           "the rule applies from this epoch on (counting from 0): gradual unfreezing")
                      .min(0);
  return s;
}

const std::map<std::string, Schema>& sections() {
  static const auto s = make_sections();
  return s;
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  Recipe load(const std::vector<std::string>& overrides) {
    Node root;
    try {
      if (!fs::exists(file_)) throw RecipeError(file_ + ": no such recipe file");
      root = YAML::LoadFile(file_);
    } catch (const YAML::Exception& e) {
      throw RecipeError(file_ + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": YAML syntax error: " + e.msg);
    }
    if (root.IsNull()) root = Node(YAML::NodeType::Map);
    if (!root.IsMap()) fail("", root, "a recipe is a mapping of sections (model:, data:, ...)");
    for (auto& o : overrides) apply_override(root, o);

    root = check_map(root, sections().at(""), "");
    root["data"] = check_map(root["data"], sections().at("data"), "data");
    root["train"] = check_map(root["train"], sections().at("train"), "train");
    root["output"] = check_map(root["output"], sections().at("output"), "output");
    root["world"] = check_map(root["world"], sections().at("world"), "world");
    root["model"] = check_component<Classifier>(root["model"], "model");
    root["data"]["dataset"] = check_component<Dataset>(root["data"]["dataset"], "data.dataset");
    root["optimizer"] = check_component<torch::optim::Optimizer>(root["optimizer"], "optimizer");
    root["scheduler"] = check_component<Scheduler>(root["scheduler"], "scheduler");
    root["train"]["loss"] = check_component<Loss>(root["train"]["loss"], "train.loss");
    for (const char* key : {"train_transforms", "eval_transforms"})
      root["data"][key] = check_transforms(root["data"][key], std::string("data.") + key);
    Node freeze = root["freeze"];
    for (std::size_t i = 0; i < freeze.size(); ++i)
      freeze[i] = check_map(freeze[i], sections().at("freeze[]"), "freeze[" + std::to_string(i) + "]");

    if (root["name"].IsNull()) root["name"] = fs::path(file_).stem().string();
    interpolate(root, "", root);
    check_world(root["world"]);
    return Recipe{file_, root};
  }

 private:
  [[noreturn]] void fail(const std::string& path, const Node& at, const std::string& msg) const {
    throw RecipeError(where(path, at) + ": " + (path.empty() ? "" : path + ": ") + msg);
  }

  // file:line:col for nodes from the file; the override for nodes the command line set.
  std::string where(const std::string& path, const Node& at) const {
    for (auto& [p, text] : overridden_)
      if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0)
        return "command line '" + text + "'";
    if (at && at.Mark().line >= 0 && !at.Mark().is_null())
      return file_ + ":" + std::to_string(at.Mark().line + 1) + ":" + std::to_string(at.Mark().column + 1);
    return file_;
  }

  void check_world(const Node& w) {
    if (w["node_rank"].as<int64_t>() >= w["nnodes"].as<int64_t>())
      fail("world.node_rank", w["node_rank"], "must be below world.nnodes (" + w["nnodes"].as<std::string>() + ")");
    std::string init = w["init_method"].as<std::string>();
    if (init != "env" && init.rfind("file://", 0) != 0)
      fail("world.init_method", w["init_method"], "expected `env` or file:///path, got '" + init + "'");
  }

  void apply_override(Node root, const std::string& text) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw RecipeError("command line '" + text + "': expected key.path=value (e.g. optimizer.lr=3e-4)");
    std::string path = text.substr(0, eq);
    Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw RecipeError("command line '" + text + "': value is not valid YAML: " + e.msg);
    }
    overridden_[path] = text;
    std::stringstream parts(path);
    std::string part, walked;
    std::vector<std::string> keys;
    while (std::getline(parts, part, '.')) keys.push_back(part);
    Node cur = root;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string& k = keys[i];
      if (k.empty()) throw RecipeError("command line '" + text + "': empty key in '" + path + "'");
      bool last = i + 1 == keys.size();
      if (cur.IsSequence()) {
        char* end = nullptr;
        long idx = std::strtol(k.c_str(), &end, 10);
        if (*end || idx < 0 || std::size_t(idx) >= cur.size())
          throw RecipeError("command line '" + text + "': " + join(walked, k) + ": not an index of the list at " +
                            (walked.empty() ? "top level" : walked));
        if (last) cur[std::size_t(idx)] = value;
        else cur.reset(cur[std::size_t(idx)]);
      } else {
        if (!cur.IsMap() && !cur.IsNull())
          throw RecipeError("command line '" + text + "': " + walked + " is a value, not a section");
        if (last) cur[k] = value;
        else {
          if (!cur[k]) cur[k] = Node(YAML::NodeType::Map);
          cur.reset(cur[k]);
        }
      }
      walked = join(walked, k);
    }
  }

  // Checks keys and types against `schema`; returns a map in schema order with defaults filled.
  Node check_map(const Node& node, const Schema& schema, const std::string& path,
                 const std::vector<std::string>& extra = {}) {
    if (node && !node.IsNull() && !node.IsMap()) fail(path, node, "expected a mapping of keys");
    std::vector<std::string> known = schema.names();
    known.insert(known.end(), extra.begin(), extra.end());
    if (node && node.IsMap())
      for (auto it = node.begin(); it != node.end(); ++it) {
        std::string key = it->first.as<std::string>();
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        fail(join(path, key), it->first, "unknown key" + did_you_mean(key, known));
      }
    Node out(YAML::NodeType::Map);
    for (const std::string& key : extra)
      if (node && node[key]) out[key] = node[key];
    for (const Param& p : schema.params()) {
      bool given = node && node.IsMap() && node[p.name];
      Node v = given ? node[p.name] : Node();
      if (!given) {
        if (p.required) fail(join(path, p.name), node, "missing (" + p.doc + ")");
        out[p.name] = YAML::Clone(p.default_value);
        continue;
      }
      std::string err = p.check(v);
      if (!err.empty()) fail(join(path, p.name), v, err);
      out[p.name] = v;
    }
    return out;
  }

  template <class Base>
  Node check_component(Node node, const std::string& path) {
    const auto& reg = Registry<Base>::instance();
    if (node.IsScalar()) {  // `loss: nll` is short for `loss: {name: nll}`
      Node full(YAML::NodeType::Map);
      full["name"] = node;
      node = full;
    }
    if (!node.IsMap()) fail(path, node, "expected a mapping with `name:`");
    Node name = node["name"];
    if (!name) fail(path + ".name", node, std::string("missing; one of: ") + names(reg.names()));
    std::string n = name.as<std::string>();
    if (!reg.find(n)) {
      fail(path + ".name", name,
           "unknown " + std::string(Kind<Base>::name).substr(0, std::string(Kind<Base>::name).size() - 1) + " '" +
               n + "'" + did_you_mean(n, reg.names()) + "; one of: " + names(reg.names()));
    }
    return check_map(node, reg.find(n)->schema, path, {"name"});
  }

  // A transform list: `- to_tensor`, `- normalize: {mean: model}`; resolved as `- {name: {...}}`.
  Node check_transforms(const Node& list, const std::string& path) {
    if (!list.IsSequence()) fail(path, list, "expected a list of transforms");
    const auto& reg = Registry<Transform>::instance();
    Node out(YAML::NodeType::Sequence);
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string item_path = path + "[" + std::to_string(i) + "]";
      Node item = list[i];
      std::string n;
      Node params;
      if (item.IsScalar()) {
        n = item.Scalar();
      } else if (item.IsMap() && item.size() == 1) {
        n = item.begin()->first.as<std::string>();
        params = item.begin()->second;
      } else {
        fail(item_path, item, "expected `name` or `name: {params}`");
      }
      if (!reg.find(n)) {
          fail(item_path, item, "unknown transform '" + n + "'" + did_you_mean(n, reg.names()) +
                                  "; one of: " + names(reg.names()));
      }
      Node entry(YAML::NodeType::Map);
      entry[n] = check_map(params, reg.find(n)->schema, item_path + "." + n);
      out.push_back(entry);
    }
    return out;
  }

  void interpolate(Node node, const std::string& path, const Node& root) {
    if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it)
        interpolate(it->second, join(path, it->first.as<std::string>()), root);
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) interpolate(node[i], path + "[" + std::to_string(i) + "]", root);
    } else if (node.IsScalar() && node.Scalar().find("${") != std::string::npos) {
      static const std::regex var(R"(\$\{([^}]*)\})");
      std::string s = node.Scalar(), out;
      std::smatch m;
      while (std::regex_search(s, m, var)) {
        out += m.prefix().str() + lookup(m[1].str(), path, node, root);
        s = m.suffix().str();
      }
      node = out + s;
    }
  }

  std::string lookup(const std::string& var, const std::string& path, const Node& at, const Node& root) {
    if (var == "name") return root["name"].as<std::string>();
    if (var == "recipe_dir") {
      std::string dir = fs::path(file_).parent_path().string();
      return dir.empty() ? "." : dir;
    }
    if (var.rfind("env:", 0) == 0) {
      const char* v = std::getenv(var.substr(4).c_str());
      if (!v) fail(path, at, "environment variable " + var.substr(4) + " is not set (used as ${" + var + "})");
      return v;
    }
    fail(path, at, "unknown variable ${" + var + "} (use ${name}, ${recipe_dir} or ${env:VAR})");
  }

  static std::string names(const std::vector<std::string>& all) {
    std::string s;
    for (auto& n : all) s += (s.empty() ? "" : ", ") + n;
    return s;
  }

  std::string file_;
  std::map<std::string, std::string> overridden_;
};

}  // namespace

Config Recipe::section(const std::string& dotted_path) const { return Config(node(dotted_path), dotted_path); }

YAML::Node Recipe::node(const std::string& dotted_path) const {
  YAML::Node cur = root;
  std::stringstream parts(dotted_path);
  std::string part;
  while (std::getline(parts, part, '.')) cur.reset(cur[part]);
  return cur;
}

std::string Recipe::dump() const {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

Recipe load_recipe(const std::string& file, const std::vector<std::string>& overrides) {
  return Loader(file).load(overrides);
}

const Schema& section_schema(const std::string& section) { return sections().at(section); }

std::vector<std::string> section_names() {
  std::vector<std::string> out;
  for (auto& [k, _] : sections())
    if (!k.empty() && k.back() != ']') out.push_back(k);
  return out;
}

}  // namespace trainrun
