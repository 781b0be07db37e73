// Recipe inheritance (`base:`): the merged tree against OmegaConf.merge on the same files
// (tests/py/recipe_merge.py), errors that name the file a bad key was written in, cycles and bad
// `base:` entries, ${recipe_dir} in a base, the resolved recipe, and `trainrun check --origin`.
#include "runner/recipe/inherit.h"
#include "runner/recipe/recipe.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <regex>

namespace trainrun {
namespace {

using test::TempDir;
using test::write_file;
using Json = nlohmann::ordered_json;  // key order matters: OmegaConf keeps the base's, new keys after

// A scalar as OmegaConf's YAML loader types it: quoted = string, else int, bool, float or string
// (the fixtures below use nothing YAML 1.1 reads otherwise, such as `yes`).
Json tree_json(const YAML::Node& n) {
  if (n.IsNull()) return nullptr;
  if (n.IsMap()) {
    Json out = Json::object();
    for (auto it = n.begin(); it != n.end(); ++it) out[it->first.Scalar()] = tree_json(it->second);
    return out;
  }
  if (n.IsSequence()) {
    Json out = Json::array();
    for (const auto& item : n) out.push_back(tree_json(item));
    return out;
  }
  const std::string& s = n.Scalar();
  static const std::regex integer(R"([-+]?[0-9]+)"), real(R"([-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?)");
  if (n.Tag() == "!") return s;
  if (std::regex_match(s, integer)) return std::stoll(s);
  if (s == "true" || s == "false") return s == "true";
  if (std::regex_match(s, real)) return std::stod(s);
  return s;
}

Json omegaconf_merge(const std::string& top) {
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/recipe_merge.py") + " " + top);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? Json::parse(r.out) : Json();
}

struct MergeCase {
  const char* what;
  std::vector<std::pair<std::string, std::string>> files;  // the first is the recipe
};

const std::vector<MergeCase> kMergeCases = {
    {"nested mappings merge key by key; new keys go after the base's",
     {{"top.yaml", "base: base.yaml\noptimizer: {lr: 0.01, nesterov: true}\nmodel:\n  drop: {rate: 0.3}\nname: child\n"},
      {"base.yaml",
       "model:\n  name: resnet50d\n  drop: {rate: 0.1, path: 0.05}\n  num_classes: auto\n"
       "optimizer: {name: sgd, lr: 0.1, momentum: 0.9}\nseed: 1\n"}}},
    {"lists are replaced, not merged",
     {{"top.yaml", "base: base.yaml\ndata: {train_transforms: [to_tensor], metrics: []}\n"},
      {"base.yaml",
       "data:\n  train_transforms: [resize, {normalize: {mean: model}}, to_tensor]\n  metrics: [accuracy, top5]\n"
       "  batch_size: 64\n"}}},
    {"a mapping or a list replaces a scalar, and a scalar a mapping or a list, whole",
     {{"top.yaml",
       "base: base.yaml\ntrain: {loss: {name: cross_entropy, label_smoothing: 0.1, weight: balanced}}\n"
       "scheduler: constant\nfreeze: none\nmetrics: [accuracy]\n"},
      {"base.yaml",
       "train: {loss: nll, epochs: 2}\nscheduler: {name: cosine, t_max: 10}\nfreeze: [{params: '*', trainable: false}]\n"
       "metrics: top5\n"}}},
    {"null sets null (the key stays), and a mapping replaces a null",
     {{"top.yaml",
       "base: base.yaml\ntrain: {max_grad_norm: null}\noptimizer:\nworld: {device: ~}\nextra: null\n"
       "data: {mixup: {mixup_alpha: 0.2}}\n"},
      {"base.yaml",
       "train: {max_grad_norm: 1.0, epochs: 3}\noptimizer: {name: sgd, lr: 0.1}\nworld: {device: cuda, nnodes: 1}\n"
       "data: {mixup: null, batch_size: 8}\n"}}},
    {"bases of bases, each path relative to the file naming it",
     {{"exp/top.yaml", "base: ../mid/b.yaml\na: {z: 3}\nname: '42'\n"},
      {"mid/b.yaml", "base: ../common/c.yaml\na: {y: 2}\nl: [2, 2]\n"},
      {"common/c.yaml", "a: {x: 1, y: 1, z: 1}\nl: [1]\nname: c\n"}}},
    {"a list of bases: later ones win, each merged with its own bases first",
     {{"top.yaml", "base: [b1.yaml, b2.yaml]\ns: top\nout: 'runs/${name}'\n"},
      {"b1.yaml", "a: {x: 1, y: 1}\ns: b1\nonly1: 1.0e-3\n"},
      {"b2.yaml", "base: b3.yaml\na: {y: 2}\ns: b2\nonly2: true\n"},
      {"b3.yaml", "a: {w: 3, x: 3}\ns: b3\nl: [a, b]\n"}}},
    {"a base named twice (a diamond) and an empty base",
     {{"top.yaml", "base: [left.yaml, right.yaml, empty.yaml]\n"},
      {"left.yaml", "base: root.yaml\nside: left\n"},
      {"right.yaml", "base: [root.yaml]\nm: {r: 1}\n"},
      {"root.yaml", "m: {r: 0, k: 0}\nside: root\n"},
      {"empty.yaml", ""}}},
};

// The tree read_recipe_files merges (before any check or default) is OmegaConf.merge's on every
// case, values and key order alike.
TEST(RecipeInheritance, MergesAsOmegaConfMerge) {
  for (const MergeCase& c : kMergeCases) {
    TempDir dir;
    for (const auto& [name, text] : c.files) write_file(dir / name, text);
    const std::string top = dir / c.files[0].first;
    Json ours = tree_json(read_recipe_files(top).root), theirs = omegaconf_merge(top);
    EXPECT_EQ(ours, theirs) << c.what << "\n  trainrun:  " << ours.dump() << "\n  omegaconf: " << theirs.dump();
    EXPECT_FALSE(ours.contains("base")) << c.what;
  }
}

// A list over a mapping, or a mapping over a list: OmegaConf.merge raises ConfigTypeError; so do we,
// at the later file's line.
TEST(RecipeInheritance, ListAndMappingDoNotReplaceEachOther) {
  TempDir dir;
  write_file(dir / "base.yaml", "world: {nproc_per_node: 2}\nfreeze: [{params: '*'}]\n");
  for (const auto& [top, error] : std::vector<std::pair<std::string, std::string>>{
           {"base: base.yaml\nworld: [1, 2]\n",
            (dir / "top.yaml") + ":2:8: world: a list cannot replace the mapping at " + (dir / "base.yaml") +
                ":1:8 (OmegaConf.merge refuses it too); write it as a mapping"},
           {"base: base.yaml\nfreeze: {params: x}\n",
            (dir / "top.yaml") + ":2:9: freeze: a mapping cannot replace the list at " + (dir / "base.yaml") +
                ":2:9 (OmegaConf.merge refuses it too); write it as a list"}}) {
    write_file(dir / "top.yaml", top);
    EXPECT_EQ(test::error_of<RecipeError>([&] { read_recipe_files(dir / "top.yaml"); }), error);
    auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/recipe_merge.py") + " " + (dir / "top.yaml"));
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("ConfigTypeError"), std::string::npos) << r.err;  // "Cannot merge DictConfig with ListConfig"
  }
}

// The merge itself, spelt out for the first cases (so a broken reference cannot pass them).
TEST(RecipeInheritance, MergedValues) {
  TempDir dir;
  for (const auto& [name, text] : kMergeCases[0].files) write_file(dir / name, text);
  EXPECT_EQ(tree_json(read_recipe_files(dir / "top.yaml").root).dump(),
            R"({"model":{"name":"resnet50d","drop":{"rate":0.3,"path":0.05},"num_classes":"auto"},)"
            R"("optimizer":{"name":"sgd","lr":0.01,"momentum":0.9,"nesterov":true},"seed":1,"name":"child"})");
  for (const auto& [name, text] : kMergeCases[5].files) write_file(dir / name, text);
  EXPECT_EQ(tree_json(read_recipe_files(dir / "top.yaml").root).dump(),
            R"({"a":{"x":3,"y":2,"w":3},"s":"top","only1":0.001,"l":["a","b"],"only2":true,"out":"runs/${name}"})");
}

const char* kBaseMinimal = R"(model: {name: basicnet}
data: {dataset: {name: mnist, root: /data/mnist}}
optimizer:
  name: sgd
  lr: 0.1
)";

std::string load_error_of(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return test::error_of<RecipeError>([&] { load_recipe(file, overrides); });
}

TEST(RecipeInheritance, ErrorsNameTheFileAndLineTheKeyWasWrittenIn) {
  TempDir dir;
  write_file(dir / "top.yaml", "base: base.yaml\nname: top\n");
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "  lrr: 1\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "base.yaml") + ":6:3: optimizer.lrr: unknown key (did you mean 'lr'?)");
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "train: {epochs: two}\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "base.yaml") + ":6:17: train.epochs: expected an integer, got 'two'");
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "train: {epochs: 2}\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml", {"train.epochs=two"}),
            "command line 'train.epochs=two': train.epochs: expected an integer, got 'two'");
  // The file's own value over the base's: the file's line.
  write_file(dir / "top.yaml", "base: base.yaml\ntrain: {epochs: 2.5}\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":2:17: train.epochs: expected an integer, got '2.5'");
  // A key misspelt in both: the later file's.
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "  lrr: 1\n");
  write_file(dir / "top.yaml", "base: base.yaml\noptimizer: {lrr: 2}\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":2:13: optimizer.lrr: unknown key (did you mean 'lr'?)");
  // Two levels down, through a list of bases; a component's shorthand name and a transform.
  write_file(dir / "top.yaml", "base: [mid.yaml]\n");
  write_file(dir / "mid.yaml", "base: base.yaml\ntrain: {loss: nlll}\n");
  write_file(dir / "base.yaml", kBaseMinimal);
  EXPECT_NE(load_error_of(dir / "top.yaml").find((dir / "mid.yaml") + ":2:15: train.loss.name: unknown loss"),
            std::string::npos) << load_error_of(dir / "top.yaml");
  write_file(dir / "mid.yaml", "base: base.yaml\ndata:\n  train_transforms: [to_tensor, {normalize: {meen: 0.5}}]\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"),
            (dir / "mid.yaml") + ":3:46: data.train_transforms[1].normalize.meen: unknown key (did you mean 'mean'?)");
  // A syntax error in a base names the base.
  write_file(dir / "base.yaml", "model: {name: basicnet\n");
  EXPECT_NE(load_error_of(dir / "top.yaml").find((dir / "base.yaml") + ":2:1: YAML syntax error"), std::string::npos)
      << load_error_of(dir / "top.yaml");
}

TEST(RecipeInheritance, CyclesAreRefusedNamingTheChain) {
  TempDir dir;
  write_file(dir / "a.yaml", "base: b.yaml\n");
  write_file(dir / "b.yaml", "seed: 1\nbase: [c.yaml, ./a.yaml]\n");
  write_file(dir / "c.yaml", "seed: 2\n");
  EXPECT_EQ(load_error_of(dir / "a.yaml"), (dir / "b.yaml") + ":2:16: base[1]: a cycle: " + (dir / "a.yaml") + " -> " +
                                          (dir / "b.yaml") + " -> " + (dir / "a.yaml"));
  write_file(dir / "a.yaml", "base: a.yaml\n");
  EXPECT_EQ(load_error_of(dir / "a.yaml"), (dir / "a.yaml") + ":1:7: base: a cycle: " + (dir / "a.yaml") + " -> " + (dir / "a.yaml"));
}

TEST(RecipeInheritance, BadBaseEntriesNameTheirLine) {
  TempDir dir;
  write_file(dir / "top.yaml", "name: x\nbase: nope.yaml\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":2:7: base: " + (dir / "nope.yaml") + ": no such recipe file");
  write_file(dir / "top.yaml", "base: [top2.yaml, sub]\n");
  write_file(dir / "top2.yaml", "");
  write_file(dir / "sub/x.yaml", "");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":1:19: base[1]: " + (dir / "sub") + ": is a folder, not a recipe file");
  write_file(dir / "top.yaml", "base: {file: a.yaml}\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"),
            (dir / "top.yaml") + ":1:7: base: expected a recipe file or a list of recipe files, got a mapping");
  write_file(dir / "top.yaml", "base:\n  - top2.yaml\n  - [a.yaml]\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":3:5: base[1]: expected a recipe file, got a list");
  write_file(dir / "top.yaml", "base: ''\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "top.yaml") + ":1:7: base: expected a recipe file, got an empty name");
  write_file(dir / "top.yaml", "base: list.yaml\n");
  write_file(dir / "list.yaml", "- a\n- b\n");
  EXPECT_EQ(load_error_of(dir / "top.yaml"), (dir / "list.yaml") + ":1:1: a recipe is a mapping of sections (model:, data:, ...)");
  write_file(dir / "top.yaml", kBaseMinimal);
  EXPECT_EQ(load_error_of(dir / "top.yaml", {"base=other.yaml"}),
            "command line 'base=other.yaml': base: the bases are merged before the overrides; write base: in a recipe file");
}

// ${recipe_dir} is the folder of the file the string was written in, so a base's paths next to
// it work from whichever recipe builds on it; the recipe's own strings use its own folder.
TEST(RecipeInheritance, RecipeDirIsTheFolderOfTheFileThatWroteIt) {
  TempDir dir;
  write_file(dir / "common/base.yaml",
             "model: {name: basicnet}\ndata: {dataset: {name: mnist, root: '${recipe_dir}/mnist'}}\n");
  write_file(dir / "exp/top.yaml", "base: ../common/base.yaml\noutput: {dir: '${recipe_dir}/runs/${name}'}\n");
  Recipe r = load_recipe(dir / "exp/top.yaml");
  EXPECT_EQ(r.root["data"]["dataset"]["root"].as<std::string>(), (dir / "common") + "/mnist");
  EXPECT_EQ(r.root["output"]["dir"].as<std::string>(), (dir / "exp") + "/runs/top");
  // An override's ${recipe_dir} is the recipe's folder, as before.
  r = load_recipe(dir / "exp/top.yaml", {"data.dataset.root=${recipe_dir}/other"});
  EXPECT_EQ(r.root["data"]["dataset"]["root"].as<std::string>(), (dir / "exp") + "/other");
}

// The resolved recipe has the bases merged in and no `base` key, and loads again to itself;
// `name` defaults to the recipe's stem unless some file sets it.
TEST(RecipeInheritance, ResolvedRecipeIsMergedAndLoadsAgain) {
  TempDir dir;
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "train: {epochs: 3, log_every_steps: 5}\n");
  write_file(dir / "top.yaml", "base: base.yaml\noptimizer: {lr: 0.05}\ntrain: {epochs: 4}\n");
  Recipe r = load_recipe(dir / "top.yaml");
  EXPECT_FALSE(r.root["base"]);
  EXPECT_EQ(r.root["name"].as<std::string>(), "top");
  EXPECT_EQ(r.root["optimizer"]["name"].as<std::string>(), "sgd");
  EXPECT_EQ(r.root["optimizer"]["lr"].as<double>(), 0.05);
  EXPECT_EQ(r.root["train"]["epochs"].as<int>(), 4);
  EXPECT_EQ(r.root["train"]["log_every_steps"].as<int>(), 5);
  write_file(dir / "again/recipe.resolved.yaml", r.dump());
  EXPECT_EQ(tree_json(load_recipe(dir / "again/recipe.resolved.yaml").root), tree_json(r.root));
  write_file(dir / "base.yaml", std::string(kBaseMinimal) + "name: from_base\n");
  EXPECT_EQ(load_recipe(dir / "top.yaml").root["name"].as<std::string>(), "from_base");
}

// `trainrun check --origin` on a Fashion-MNIST recipe with a base: each value's line says where it
// came from; and a real run's recipe.resolved.yaml is the merged recipe, which checks to the same.
class InheritCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    write_file(dir / "base.yaml",
               "model: {name: basicnet}\n"
               "data:\n"
               "  dataset: {name: mnist, root: /usr/share/datasets/fashion-mnist}\n"
               "  batch_size: 32\n"
               "  max_train_samples: 64\n"
               "  max_eval_samples: 32\n"
               "optimizer: {name: adamw, lr: 1.0e-3}\n"
               "train: {epochs: 3, loss: nll}\n"
               "world: {nproc_per_node: 1, master_port: 0, threads_per_proc: auto}\n");
    write_file(dir / "exp/top.yaml",
               "base: ../base.yaml\n"
               "optimizer: {lr: 2.0e-3}\n"
               "data: {workers: 1}\n"
               "output: {dir: " + (dir / "run") + "}\n");
  }
  // The line of `check --origin`'s listing for `path`.
  static std::string line_of(const std::string& out, const std::string& path) {
    std::smatch m;
    std::regex line("(^|\n)(" + std::regex_replace(path, std::regex(R"([.\[\]])"), R"(\$&)") + ": [^\n]*)");
    return std::regex_search(out, m, line) ? m[2].str() : "(no line for " + path + ")";
  }
  static std::string squeeze(const std::string& s) { return std::regex_replace(s, std::regex(" +#"), " #"); }
  TempDir dir;
};

TEST_F(InheritCli, CheckOriginSaysWhereEachValueCameFrom) {
  auto r = test::run(test::trainrun("check " + (dir / "exp/top.yaml") + " --origin train.epochs=1"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string base = dir / "base.yaml", top = dir / "exp/top.yaml";
  EXPECT_NE(r.out.find("# resolved recipe (" + top + "), each value with where it came from\n"), std::string::npos) << r.out;
  EXPECT_EQ(squeeze(line_of(r.out, "optimizer.lr")), "optimizer.lr: 2.0e-3 # " + top + ":2:17");
  EXPECT_EQ(squeeze(line_of(r.out, "optimizer.name")), "optimizer.name: adamw # " + base + ":7:19");
  EXPECT_EQ(squeeze(line_of(r.out, "optimizer.weight_decay")), "optimizer.weight_decay: 0.01 # default");
  EXPECT_EQ(squeeze(line_of(r.out, "train.epochs")), "train.epochs: 1 # command line 'train.epochs=1'");
  EXPECT_EQ(squeeze(line_of(r.out, "train.loss.name")), "train.loss.name: nll # " + base + ":8:26");
  EXPECT_EQ(squeeze(line_of(r.out, "data.workers")), "data.workers: 1 # " + top + ":3:17");
  EXPECT_EQ(squeeze(line_of(r.out, "data.train_transforms[0].to_tensor")), "data.train_transforms[0].to_tensor: {} # default");
  EXPECT_EQ(squeeze(line_of(r.out, "seed")), "seed: 42 # default");
  EXPECT_EQ(squeeze(line_of(r.out, "name")), "name: top # default");
  EXPECT_EQ(squeeze(line_of(r.out, "model.num_classes")), "model.num_classes: 10 # auto (default)");
  EXPECT_EQ(squeeze(line_of(r.out, "data.eval_batch_size")), "data.eval_batch_size: 32 # auto (default)");
  EXPECT_NE(squeeze(line_of(r.out, "world.threads_per_proc")).find(" # auto (" + base + ":9:62)"), std::string::npos)
      << line_of(r.out, "world.threads_per_proc");
  EXPECT_EQ(line_of(r.out, "base"), "(no line for base)");
  // Nothing else changed: the usual report follows.
  EXPECT_NE(r.out.find("\nsteps per epoch: 2 "), std::string::npos) << r.out;
}

TEST_F(InheritCli, RunWritesTheMergedRecipeWhichRunsAgainAsIs) {
  auto r = test::run(test::trainrun((dir / "exp/top.yaml") + " train.epochs=1"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string resolved = test::read_file(dir / "run/recipe.resolved.yaml");
  YAML::Node tree = YAML::Load(resolved);
  EXPECT_FALSE(tree["base"]) << resolved;
  EXPECT_EQ(tree["optimizer"]["lr"].as<double>(), 2.0e-3);
  EXPECT_EQ(tree["optimizer"]["name"].as<std::string>(), "adamw");
  EXPECT_EQ(tree["train"]["loss"]["name"].as<std::string>(), "nll");
  EXPECT_EQ(tree["train"]["epochs"].as<int>(), 1);
  // `check` of the resolved file prints the recipe the run wrote.
  auto again = test::run(test::trainrun("check " + (dir / "run/recipe.resolved.yaml")));
  ASSERT_EQ(again.code, 0) << again.err;
  const std::size_t from = again.out.find('\n') + 1, to = again.out.find("\nmodel: basicnet, ");
  ASSERT_NE(to, std::string::npos) << again.out;
  EXPECT_EQ(tree_json(YAML::Load(again.out.substr(from, to - from))), tree_json(tree)) << again.out;
}

}  // namespace
}  // namespace trainrun
