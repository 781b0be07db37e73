// The recipe engine: defaults, overrides, interpolation, and errors that point at the line.
#include "runner/recipe/recipe.h"

#include "test_util.h"

#include <cstdlib>

namespace trainrun {
namespace {

using test::TempDir;
using test::write_file;

const char* kMinimal = R"(model:
  name: basicnet
data:
  dataset:
    name: mnist
    root: /data/mnist
optimizer:
  name: sgd
  lr: 0.1
)";

std::string error_of(const std::string& file, const std::vector<std::string>& overrides = {}) {
  try {
    load_recipe(file, overrides);
  } catch (const RecipeError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Recipe, FillsDefaultsFromSchemas) {
  TempDir dir;
  write_file(dir / "job.yaml", kMinimal);
  Recipe r = load_recipe(dir / "job.yaml");
  EXPECT_EQ(r.root["name"].as<std::string>(), "job");  // the file's stem
  EXPECT_EQ(r.root["seed"].as<int>(), 42);
  EXPECT_EQ(r.root["optimizer"]["momentum"].as<double>(), 0.0);
  EXPECT_FALSE(r.root["optimizer"]["nesterov"].as<bool>());
  EXPECT_EQ(r.root["scheduler"]["name"].as<std::string>(), "constant");
  EXPECT_EQ(r.root["train"]["loss"]["name"].as<std::string>(), "cross_entropy");
  EXPECT_EQ(r.root["data"]["batch_size"].as<int>(), 64);
  EXPECT_EQ(r.root["output"]["dir"].as<std::string>(), "runs/job");  // runs/${name}, interpolated
  ASSERT_EQ(r.root["data"]["train_transforms"].size(), 2u);
  EXPECT_EQ(r.root["data"]["train_transforms"][1]["normalize"]["mean"].as<std::string>(), "model");
}

TEST(Recipe, OverridesUseDottedPathsAndYamlValues) {
  TempDir dir;
  write_file(dir / "job.yaml", kMinimal);
  Recipe r = load_recipe(dir / "job.yaml", {"optimizer.lr=3e-4", "train.epochs=3", "optimizer.no_decay=[bias, norm]",
                                            "data.train_transforms=[to_tensor]", "name=other"});
  EXPECT_DOUBLE_EQ(r.root["optimizer"]["lr"].as<double>(), 3e-4);
  EXPECT_EQ(r.root["train"]["epochs"].as<int>(), 3);
  EXPECT_EQ(r.root["optimizer"]["no_decay"].as<std::vector<std::string>>(), (std::vector<std::string>{"bias", "norm"}));
  EXPECT_EQ(r.root["data"]["train_transforms"].size(), 1u);
  EXPECT_EQ(r.root["output"]["dir"].as<std::string>(), "runs/other");
}

TEST(Recipe, OverrideCanSwitchComponentAndIndexLists) {
  TempDir dir;
  write_file(dir / "job.yaml", std::string(kMinimal) + "  momentum: 0.9\n");
  Recipe r = load_recipe(dir / "job.yaml", {"optimizer={name: adam, lr: 0.01}", "data.eval_transforms=[to_tensor, normalize]",
                                            "data.eval_transforms.1=to_tensor"});
  EXPECT_EQ(r.root["data"]["eval_transforms"][1]["to_tensor"].size(), 0u);
  EXPECT_EQ(r.root["optimizer"]["name"].as<std::string>(), "adam");
  EXPECT_EQ(r.root["optimizer"]["betas"].as<std::vector<double>>(), (std::vector<double>{0.9, 0.999}));
  EXPECT_FALSE(r.root["optimizer"]["momentum"]);  // sgd's keys are gone with sgd
}

TEST(Recipe, InterpolatesNameRecipeDirAndEnv) {
  TempDir dir;
  write_file(dir / "sub/job.yaml", std::string(kMinimal) + "name: exp1\noutput: {dir: '${recipe_dir}/out/${name}-${env:TRAINRUN_TEST_TAG}'}\n");
  ::setenv("TRAINRUN_TEST_TAG", "t7", 1);
  Recipe r = load_recipe(dir / "sub/job.yaml");
  EXPECT_EQ(r.root["output"]["dir"].as<std::string>(), (dir / "sub") + "/out/exp1-t7");
  ::unsetenv("TRAINRUN_TEST_TAG");
  EXPECT_NE(error_of(dir / "sub/job.yaml").find("environment variable TRAINRUN_TEST_TAG is not set"), std::string::npos);
}

TEST(RecipeErrors, UnknownKeyNamesFileLineColumnAndSuggests) {
  TempDir dir;
  write_file(dir / "job.yaml", std::string(kMinimal) + "  lrr: 1\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":10:3: optimizer.lrr: unknown key (did you mean 'lr'?)");
}

TEST(RecipeErrors, MisspeltSectionNamesFileLineColumn) {
  TempDir dir;
  write_file(dir / "job.yaml", "model: {name: basicnet}\ndata: {dataset: {name: mnist, root: x}}\noptimzer: {name: sgd}\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":3:1: optimzer: unknown key (did you mean 'optimizer'?)");
}

TEST(RecipeErrors, OverrideErrorsNameTheOverride) {
  TempDir dir;
  write_file(dir / "job.yaml", kMinimal);
  EXPECT_EQ(error_of(dir / "job.yaml", {"optimizer.lrr=1"}),
            "command line 'optimizer.lrr=1': optimizer.lrr: unknown key (did you mean 'lr'?)");
  EXPECT_EQ(error_of(dir / "job.yaml", {"optimizer.lr=abc"}),
            "command line 'optimizer.lr=abc': optimizer.lr: expected a number, got 'abc'");
  EXPECT_NE(error_of(dir / "job.yaml", {"no-equals-sign"}).find("expected key.path=value"), std::string::npos);
}

TEST(RecipeErrors, WrongTypesAndRanges) {
  TempDir dir;
  write_file(dir / "job.yaml", std::string(kMinimal) + "train: {epochs: two}\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":10:17: train.epochs: expected an integer, got 'two'");
  write_file(dir / "job.yaml", std::string(kMinimal) + "  momentum: -0.5\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":10:13: optimizer.momentum: must be >= 0, got -0.5");
  write_file(dir / "job.yaml", std::string(kMinimal) + "  nesterov: maybe\n");
  EXPECT_NE(error_of(dir / "job.yaml").find("optimizer.nesterov: expected true or false, got 'maybe'"), std::string::npos);
  write_file(dir / "job.yaml", std::string(kMinimal) + "precision: fp8\n");
  EXPECT_NE(error_of(dir / "job.yaml").find(":10:12: precision: unknown value 'fp8'"), std::string::npos);
  write_file(dir / "job.yaml", kMinimal);
  EXPECT_NE(error_of(dir / "job.yaml", {"model.num_classes=many"}).find("model.num_classes: expected an integer, got 'many'"), std::string::npos);
}

// YAML's complex keys (`? [a, b]: 1`) and a mapping as a component's name escaped as yaml-cpp's
// "bad conversion" (exit 1, no file or key). Found by fuzz/recipe_fuzz.cpp (fuzz/regressions/recipe/).
TEST(RecipeErrors, KeysThatAreNotNamesNameFileLineColumn) {
  TempDir dir;
  write_file(dir / "job.yaml", std::string(kMinimal) + "  ? [a, b]\n  : 1\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":10:5: optimizer: a key must be a plain name, not a list");
  write_file(dir / "job.yaml", std::string(kMinimal) + "? {x: 1}\n: 1\n");
  EXPECT_EQ(error_of(dir / "job.yaml"), (dir / "job.yaml") + ":10:3: a key must be a plain name, not a mapping");
  write_file(dir / "job.yaml", "model: {name: {x: 1}}\ndata: {dataset: {name: mnist, root: x}}\n");
  EXPECT_NE(error_of(dir / "job.yaml").find(":1:15: model.name: expected a name; one of: basicnet"), std::string::npos);
}

TEST(RecipeErrors, UnknownComponentSuggestsRegisteredName) {
  TempDir dir;
  write_file(dir / "job.yaml", "model: {name: basicnett}\ndata: {dataset: {name: mnist, root: x}}\n");
  std::string e = error_of(dir / "job.yaml");
  EXPECT_NE(e.find(":1:15: model.name: unknown model 'basicnett' (did you mean 'basicnet'?)"), std::string::npos) << e;
  write_file(dir / "job.yaml", std::string(kMinimal) + "  name: adamm\n");
  // a duplicate `name` key: yaml-cpp keeps the first; use an override instead
  e = error_of(dir / "job.yaml", {"optimizer.name=adamm"});
  EXPECT_NE(e.find("optimizer.name: unknown optimizer 'adamm' (did you mean 'adam'?)"), std::string::npos) << e;
  write_file(dir / "job.yaml", std::string(kMinimal) + "  foo: 1\n");
  write_file(dir / "job.yaml", "model: {name: basicnet}\ndata:\n  dataset: {name: mnist, root: x}\n  train_transforms: [to_tensr]\n");
  e = error_of(dir / "job.yaml");
  EXPECT_NE(e.find(":4:22: data.train_transforms[0]: unknown transform 'to_tensr' (did you mean 'to_tensor'?)"),
            std::string::npos) << e;
}

// Each kind says its own singular (Kind<Base>::singular), not its plural less a letter ("losse").
TEST(RecipeErrors, UnknownComponentNamesItsKindInTheSingular) {
  TempDir dir;
  write_file(dir / "job.yaml", "model: {name: basicnet}\ndata: {dataset: {name: mnist, root: x}}\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.loss=nlll", "train.loss.name: unknown loss 'nlll' (did you mean 'nll'?)"},
      {"scheduler.name=cosin", "scheduler.name: unknown scheduler 'cosin' (did you mean 'cosine'?)"},
      {"data.dataset.name=mnst", "data.dataset.name: unknown dataset 'mnst' (did you mean 'mnist'?)"},
      {"data.batch_transforms=[mixupp]", "data.batch_transforms[0]: unknown batch transform 'mixupp'"},
      {"callbacks=[{name: early_stoping}]", "callbacks[0].name: unknown callback 'early_stoping'"},
  };
  for (const auto& [override_, message] : cases) {
    std::string e = error_of(dir / "job.yaml", {override_});
    EXPECT_NE(e.find(message), std::string::npos) << override_ << ": " << e;
  }
}

TEST(RecipeErrors, MissingRequiredAndSyntax) {
  TempDir dir;
  write_file(dir / "job.yaml", "model: {name: basicnet}\ndata: {dataset: {name: mnist}}\n");
  EXPECT_NE(error_of(dir / "job.yaml").find("data.dataset.root: missing"), std::string::npos);
  write_file(dir / "job.yaml", "model: {name: basicnet\n");
  EXPECT_NE(error_of(dir / "job.yaml").find((dir / "job.yaml") + ":2:1: YAML syntax error"), std::string::npos)
      << error_of(dir / "job.yaml");
  EXPECT_EQ(error_of(dir / "absent.yaml"), (dir / "absent.yaml") + ": no such recipe file");
  write_file(dir / "job.yaml", std::string(kMinimal) + "output: {dir: '${nme}'}\n");
  EXPECT_NE(error_of(dir / "job.yaml").find("output.dir: unknown variable ${nme}"), std::string::npos);
}

TEST(RecipeErrors, FreezeRulesAreChecked) {
  TempDir dir;
  write_file(dir / "job.yaml", std::string(kMinimal) + "freeze:\n  - {params: '*', trainabel: false}\n");
  EXPECT_NE(error_of(dir / "job.yaml").find(":11:19: freeze[0].trainabel: unknown key (did you mean 'trainable'?)"),
            std::string::npos) << error_of(dir / "job.yaml");
}

}  // namespace
}  // namespace trainrun
