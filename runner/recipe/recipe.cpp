// Loading a recipe: YAML file + dotted overrides, checked against the section and component
// schemas, defaults filled in, ${...} interpolated (the section schemas are in sections.cpp).
#include "runner/recipe/recipe.h"
#include "runner/recipe/overrides.h"

#include "components/data/batch_transform.h"
#include "components/data/dataset.h"
#include "components/data/transform.h"
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "registry/plugin.h"
#include "registry/registry.h"
#include "components/callbacks/callback.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using YAML::Node;

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  Node transform_list(const Node& list, const std::string& path) {
    return check_transforms<Transform>(list, path);
  }

  Recipe load(const std::vector<std::string>& overrides) {
    try {
      return load_checked(overrides);
    } catch (const YAML::Exception& e) {
      // A conversion the checks above did not foresee: still one line naming the place.
      std::string file = sources_.file_at(e.mark);
      throw RecipeError((file.empty() ? file_ : file) + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " +
                        e.msg);
    }
  }

 private:
  Recipe load_checked(const std::vector<std::string>& overrides) {
    RecipeFiles files = read_recipe_files(file_);
    sources_ = std::move(files.sources);
    Node root = files.root;
    for (auto& o : overrides) overridden_[apply_override(root, o)] = o;

    root = check_map(root, section_schema(""), "");
    root.remove("base");  // merged in by read_recipe_files; only documented in the schema
    load_plugins(root);  // before anything they may register is looked up
    root["data"] = check_map(root["data"], section_schema("data"), "data");
    root["train"] = check_map(root["train"], section_schema("train"), "train");
    if (root["train"]["ema"].IsMap()) root["train"]["ema"] = check_map(root["train"]["ema"], section_schema("train.ema"), "train.ema");
    root["output"] = check_map(root["output"], section_schema("output"), "output");
    if (root["output"]["push_to_hub"].IsMap())
      root["output"]["push_to_hub"] = check_map(root["output"]["push_to_hub"], section_schema("output.push_to_hub"), "output.push_to_hub");
    root["world"] = check_map(root["world"], section_schema("world"), "world");
    root["model"] = check_component<Classifier>(root["model"], "model");
    root["data"]["dataset"] = check_component<Dataset>(root["data"]["dataset"], "data.dataset");
    root["optimizer"] = check_component<torch::optim::Optimizer>(root["optimizer"], "optimizer");
    Node groups = root["optimizer"]["groups"];
    for (std::size_t i = 0; groups.IsSequence() && i < groups.size(); ++i)
      groups[i] = check_map(groups[i], param_group_rule_schema(), "optimizer.groups[" + std::to_string(i) + "]");
    root["scheduler"] = check_component<Scheduler>(root["scheduler"], "scheduler");
    root["train"]["loss"] = check_component<Loss>(root["train"]["loss"], "train.loss");
    for (const char* key : {"train_transforms", "eval_transforms"})
      if (!root["data"][key].IsScalar())  // eval_transforms: model is resolved with the model (pretrained.h)
        root["data"][key] = check_transforms<Transform>(root["data"][key], std::string("data.") + key);
    root["data"]["batch_transforms"] =
        check_transforms<BatchTransform>(root["data"]["batch_transforms"], "data.batch_transforms");
    expand_mixup(root["data"]);
    Node callbacks = root["callbacks"];
    for (std::size_t i = 0; i < callbacks.size(); ++i)
      callbacks[i] = check_component<Callback>(callbacks[i], "callbacks[" + std::to_string(i) + "]");
    Node freeze = root["freeze"];
    for (std::size_t i = 0; i < freeze.size(); ++i)
      freeze[i] = check_map(freeze[i], section_schema("freeze[]"), "freeze[" + std::to_string(i) + "]");

    if (root["name"].IsNull()) root["name"] = fs::path(file_).stem().string();
    interpolate(root, "", root);
    check_world(root["world"]);
    return Recipe{file_, root, std::move(sources_), std::move(overridden_)};
  }

  // `plugins:` (${recipe_dir} and ${env:VAR} work in their paths).
  void load_plugins(Node root) {
    Node plugins = root["plugins"];
    for (std::size_t i = 0; i < plugins.size(); ++i) {
      std::string path = "plugins[" + std::to_string(i) + "]";
      interpolate(plugins[i], path, root);
      try {
        load_plugin(plugins[i].as<std::string>());
      } catch (const std::runtime_error& e) {
        fail(path, plugins[i], e.what());
      }
    }
  }

  // A mapping's key as text: YAML allows `? [a, b]: 1`, a recipe's keys are plain names.
  std::string key_of(const Node& key, const std::string& path) const {
    if (!key.IsScalar()) fail(path, key, "a key must be a plain name, not a " + std::string(key.IsMap() ? "mapping" : key.IsSequence() ? "list" : "null"));
    return key.Scalar();
  }

  [[noreturn]] void fail(const std::string& path, const Node& at, const std::string& msg) const {
    throw RecipeError(where(path, at) + ": " + (path.empty() ? "" : path + ": ") + msg);
  }

  // file:line:col for nodes from the recipe or a base; the override for nodes the command line
  // set, including a section it created (`wrld.nproc_per_node=1` makes the key `wrld`).
  std::string where(const std::string& path, const Node& at) const {
    std::string written = written_at(sources_, overridden_, path, at);
    if (!written.empty()) return written;
    if (at && at.Mark().line >= 0 && !at.Mark().is_null())
      return file_ + ":" + std::to_string(at.Mark().line + 1) + ":" + std::to_string(at.Mark().column + 1);
    for (auto& [p, text] : overridden_)
      if (!path.empty() && (p.rfind(path + ".", 0) == 0 || p.rfind(path + "[", 0) == 0)) return "command line '" + text + "'";
    return file_;
  }

  void check_world(const Node& w) {
    if (w["node_rank"].as<int64_t>() >= w["nnodes"].as<int64_t>())
      fail("world.node_rank", w["node_rank"], "must be below world.nnodes (" + w["nnodes"].as<std::string>() + ")");
    std::string init = w["init_method"].as<std::string>();
    if (init != "env" && init.rfind("file://", 0) != 0)
      fail("world.init_method", w["init_method"], "expected `env` or file:///path, got '" + init + "'");
  }

  // Checks keys and types against `schema`; returns a map in schema order with defaults filled.
  Node check_map(const Node& node, const Schema& schema, const std::string& path,
                 const std::vector<std::string>& extra = {}) {
    if (node && !node.IsNull() && !node.IsMap()) fail(path, node, "expected a mapping of keys");
    std::vector<std::string> known = schema.names();
    known.insert(known.end(), extra.begin(), extra.end());
    if (node && node.IsMap())
      for (auto it = node.begin(); it != node.end(); ++it) {
        std::string key = key_of(it->first, path);
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::string hint = did_you_mean(key, known);
        // Else a key of another section: `epochs=2` for train.epochs.
        if (hint.empty()) hint = did_you_mean(key, recipe_key_paths(path), /*by_last_part=*/true);
        fail(join(path, key), it->first, "unknown key" + hint);
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

  // `data.mixup: {...}` (timm's --mixup/--cutmix as one key): checked against the mixup batch
  // transform's schema under its own path, then written as the first of data.batch_transforms.
  void expand_mixup(Node data) {
    Node mixup = data["mixup"];
    if (!mixup || mixup.IsNull()) return;
    Node checked = check_map(mixup, Registry<BatchTransform>::instance().get("mixup").schema, "data.mixup");
    Node list(YAML::NodeType::Sequence), entry(YAML::NodeType::Map);
    entry["mixup"] = checked;
    list.push_back(entry);
    for (const auto& t : data["batch_transforms"]) {
      if (t.begin()->first.as<std::string>() == "mixup")
        fail("data.mixup", mixup, "data.batch_transforms has a mixup already; give one of the two");
      list.push_back(t);
    }
    data["batch_transforms"] = list;
    data["mixup"] = Node(YAML::NodeType::Null);
  }

  template <class Base>
  Node check_component(Node node, const std::string& path) {
    const auto& reg = Registry<Base>::instance();
    if (node.IsScalar()) {  // `loss: nll` is short for `loss: {name: nll}`
      Node full(YAML::NodeType::Map);
      full["name"] = node;
      sources_.add_alias(full, node);
      sources_.add_alias(full["name"], node);
      node.reset(full);  // not `node = full`, which would turn the scalar in the tree into the mapping
    }
    if (!node.IsMap()) fail(path, node, "expected a mapping with `name:`");
    Node name = node["name"];
    if (!name) fail(path + ".name", node, std::string("missing; one of: ") + names(reg.names()));
    if (!name.IsScalar()) fail(path + ".name", name, std::string("expected a name; one of: ") + names(reg.names()));
    std::string n = name.Scalar();
    if (!reg.find(n)) {
      fail(path + ".name", name,
           std::string("unknown ") + Kind<Base>::singular + " '" + n + "'" + did_you_mean(n, reg.names()) +
               "; one of: " + names(reg.names()));
    }
    return check_map(node, reg.find(n)->schema, path, {"name"});
  }

  // A transform list: `- to_tensor`, `- normalize: {mean: model}`; resolved as `- {name: {...}}`.
  template <class Base>
  Node check_transforms(const Node& list, const std::string& path) {
    const std::string what = Kind<Base>::singular;
    if (!list.IsSequence()) fail(path, list, "expected a list of " + what + "s");
    const auto& reg = Registry<Base>::instance();
    Node out(YAML::NodeType::Sequence);
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string item_path = path + "[" + std::to_string(i) + "]";
      Node item = list[i];
      std::string n;
      Node params;
      if (item.IsScalar()) {
        n = item.Scalar();
      } else if (item.IsMap() && item.size() == 1) {
        n = key_of(item.begin()->first, item_path);
        params = item.begin()->second;
      } else {
        fail(item_path, item, "expected `name` or `name: {params}`");
      }
      if (!reg.find(n)) {
          fail(item_path, item, "unknown " + what + " '" + n + "'" + did_you_mean(n, reg.names()) +
                                  "; one of: " + names(reg.names()));
      }
      Node entry(YAML::NodeType::Map), checked = check_map(params, reg.find(n)->schema, item_path + "." + n);
      sources_.add_alias(checked, item.IsScalar() ? item : params);
      entry[n] = checked;
      out.push_back(entry);
    }
    return out;
  }

  void interpolate(Node node, const std::string& path, const Node& root) {
    if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it)
        interpolate(it->second, join(path, key_of(it->first, path)), root);
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
    if (var == "recipe_dir") {  // the folder of the file the string was written in
      std::string file = override_of(overridden_, path) ? "" : sources_.file_of(at);
      std::string dir = fs::path(file.empty() ? file_ : file).parent_path().string();
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
  RecipeSources sources_;
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

std::string Recipe::key_at(const std::string& dotted_path) const {
  const std::string at = written_at(sources, overrides, dotted_path, node(dotted_path));
  return at.empty() ? dotted_path : dotted_path + " (" + at + ")";
}

std::string Recipe::dump() const {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

Recipe load_recipe(const std::string& file, const std::vector<std::string>& overrides) {
  return Loader(file).load(overrides);
}

YAML::Node check_transform_list(const Recipe& recipe, const YAML::Node& list, const std::string& path) {
  return Loader(recipe.file).transform_list(list, path);
}

}  // namespace trainrun
