// The recipes a user is shown, tried where the README's first command leaves them: a finished
// quickstart in runs/quickstart (tests/support/finished_demo.h). Five docs recipes build on the
// quickstart and once inherited its name, so its run folder: `check --schedule` refused them,
// early-stopping continued the demo's run as its own, ema loaded its checkpoint-best as EMA
// weights. Each shipped recipe now has a run folder of its own, and nothing they do touches the
// demo's.
#include "runner/recipe/recipe.h"
#include "support/finished_demo.h"
#include "support/photo_folder.h"
#include "test_util.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> recipes_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> shipped_recipes() {
  auto out = recipes_in(test::source("recipes"));
  for (const auto& r : recipes_in(test::source("docs/recipes"))) out.push_back(r);
  return out;
}

// The docs recipes built on the quickstart (its data, so they run here).
const std::vector<std::string> kOnQuickstart = {"early-stopping", "ema", "lamb", "linear-warmup", "reduce-on-plateau"};

TEST(DocsRecipes, EveryShippedRecipeHasARunFolderOfItsOwn) {
  std::map<std::string, std::string> owner;  // output.dir -> the recipe that writes there
  for (const auto& recipe : shipped_recipes()) {
    const Recipe loaded = load_recipe(recipe.string());
    const std::string dir = loaded.root["output"]["dir"].as<std::string>();
    EXPECT_EQ(dir, "runs/" + loaded.root["name"].as<std::string>()) << recipe;
    auto [at, fresh] = owner.emplace(dir, recipe.string());
    EXPECT_TRUE(fresh) << recipe << " and " << at->second << " share the run folder " << dir;
  }
  for (const auto& name : kOnQuickstart)
    EXPECT_TRUE(fs::exists(test::source("docs/recipes/" + name + ".yaml"))) << name;
}

// The README's headline recipe on the photos scripts/sample-photos.sh makes (as the README and
// the own-images page say to try it): ten class folders that `check` takes.
TEST(DocsRecipes, SamplePhotosAreAFolderTheHeadlineRecipeTakes) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const std::string env = "cd '" + dir.path().string() + "' && { [ -e recipes ] || ln -s '" + test::source("recipes") + "' recipes; } && HF_HOME='" +
                          (dir / "hf") + "' TRAINRUN=" + TRAINRUN_BINARY + " ";
  auto made = test::run(env + test::source("scripts/sample-photos.sh") + " data/photos 5");
  ASSERT_EQ(made.code, 0) << made.err;
  EXPECT_EQ(made.out, "data/photos: 50 images in 10 class folders\n");
  EXPECT_TRUE(fs::is_directory(dir / "data/photos/T-shirt-top")) << made.out;
  auto check = test::run(env + test::trainrun("check " + test::source("docs/recipes/own-images.yaml")));
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_NE(check.out.find("data: image_folder, 10 classes"), std::string::npos) << check.out;
  auto again = test::run(env + test::source("scripts/sample-photos.sh") + " data/photos 5");
  EXPECT_EQ(again.code, 2);
  EXPECT_EQ(again.err, "sample-photos.sh: data/photos is not empty; give another folder\n");
}

TEST(DocsAfterDemo, RecipesOnPagesCheckAndTrainBesideTheDemo) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const fs::path work = dir.path();
  const std::string made = test::add_finished_demo(work);
  ASSERT_TRUE(fs::is_regular_file(work / "runs/quickstart/model.safetensors")) << made;
  test::write_photo_folder(work);
  const auto demo = test::snapshot(work / "runs/quickstart");
  const std::string env = "cd '" + work.string() + "' && HF_HOME='" + (dir / "hf") + "' ";

  // check: what a run of each recipe would do with its folder (the demo's own: finished).
  for (const auto& recipe : recipes_in(test::source("docs/recipes"))) {
    auto r = test::run(env + test::trainrun("check '" + recipe.string() + "'"));
    EXPECT_EQ(r.code, 0) << recipe << "\n" << r.err;
    const std::string folder = load_recipe(recipe.string()).root["output"]["dir"].as<std::string>();
    EXPECT_NE(folder, "runs/quickstart") << recipe;
    EXPECT_NE(r.out.find("run folder: start in " + folder + " (no checkpoint there)"), std::string::npos)
        << recipe << "\n" << r.out;
  }
  auto demo_check = test::run(env + test::trainrun("check " + test::source("recipes/quickstart.yaml")));
  EXPECT_NE(demo_check.out.find("run folder: nothing: runs/quickstart: finished at step 469 (epoch 1 of 1); nothing to train"),
            std::string::npos) << demo_check.out;
  auto schedule = test::run(env + test::trainrun("check " + test::source("docs/recipes/linear-warmup.yaml") + " --schedule"));
  EXPECT_EQ(schedule.code, 0) << schedule.err;

  // Each quickstart-based recipe trains (cut short) into its own folder.
  for (const auto& name : kOnQuickstart) {
    auto r = test::run(env + test::trainrun(test::source("docs/recipes/" + name + ".yaml") +
                                            " train.epochs=2 data.max_train_samples=256 data.max_eval_samples=200"
                                            " world.nproc_per_node=1"));
    EXPECT_EQ(r.code, 0) << name << "\n" << r.out << r.err;
    EXPECT_EQ(r.out.find("Resuming"), std::string::npos) << name << "\n" << r.out;
    EXPECT_TRUE(fs::is_regular_file(work / "runs" / name / "model.safetensors")) << name << "\n" << r.out << r.err;
  }
  EXPECT_TRUE(fs::is_regular_file(work / "runs/ema/model_ema.safetensors"));
  EXPECT_EQ(test::snapshot(work / "runs/quickstart"), demo);
}

}  // namespace
}  // namespace trainrun
