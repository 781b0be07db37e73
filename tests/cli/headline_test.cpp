// The command this project exists for, on a machine whose only data is what this test serves on
// loopback: `trainrun recipes/pets_resnet50d.yaml` as shipped fetches timm's resnet50d weights
// from a Hugging Face Hub stand-in (HF_ENDPOINT) into the Hub cache and the Oxford-IIIT Pet
// images.tar.gz from a mirror (TRAINRUN_DATASETS_MIRROR), trains a handful of steps, and a
// second run downloads nothing.
#include "components/data/image.h"
#include "components/models/model.h"
#include "support/hub_server.h"
#include "support/published_weights.h"
#include "registry/registry.h"
#include "support/download.h"
#include "runner/io/weights.h"
#include "runner/recipe/recipe.h"
#include "test_util.h"

#include <torch/torch.h>

#include <algorithm>

namespace trainrun {
namespace {

class Headline : public ::testing::Test {
 protected:
  void SetUp() override {
    // The published images.tar.gz: a few photos of two breeds under images/.
    std::filesystem::create_directories(dir / "src/images");
    torch::manual_seed(3);
    for (int i = 1; i <= 12; ++i) {
      write_image(dir / ("src/images/Abyssinian_" + std::to_string(i) + ".jpg"),
                  torch::randint(0, 120, {60, 80, 3}, torch::kUInt8));
      write_image(dir / ("src/images/beagle_" + std::to_string(i) + ".jpg"),
                  torch::randint(100, 256, {80, 60, 3}, torch::kUInt8));
    }
    std::filesystem::create_directories(dir / "mirror");
    ASSERT_EQ(test::run("tar -C " + (dir / "src") + " -czf " + (dir / "mirror/images.tar.gz") + " images").code, 0);
    // timm/resnet50d.ra2_in1k's model.safetensors: ImageNet-shaped resnet50d weights.
    auto model = Registry<Classifier>::instance().get("resnet50d").make(
        Config(YAML::Load("{num_classes: 1000, drop_rate: 0.0, drop_path_rate: 0.0, zero_init_last: true}")));
    save_safetensors(dir / "weights.safetensors", state_dict(*model));
    nlohmann::json config = {
        {"repos",
         {{"timm/resnet50d.ra2_in1k",
           {{"revisions",
             {{"main",
               {{"commit", "0123456789abcdef0123456789abcdef01234567"},
                {"files", {{"model.safetensors", {{"path", dir / "weights.safetensors"}}}}}}}}}}}}},
        {"files_dir", dir / "mirror"}};
    server.emplace(config, dir.path());
    ASSERT_GT(server->port(), 0);
  }

  // The shipped recipe, a handful of steps, from an empty working folder and an empty HF_HOME.
  test::RunResult run_recipe(const std::string& output) {
    std::string env = "cd " + (dir / "work") + " && env -u HF_HUB_CACHE -u HF_HUB_OFFLINE HF_HOME=" + (dir / "hf") +
                      " HF_ENDPOINT=" + server->url() + " TRAINRUN_DATASETS_MIRROR=" + server->url("/files") +
                      " TRAINRUN_DATASETS_MD5=images.tar.gz=" + file_md5(dir / "mirror/images.tar.gz") + " ";
    return test::run(env + test::trainrun(test::source("recipes/pets_resnet50d.yaml") +
                                          " train.epochs=1 data.batch_size=4 data.max_train_samples=8"
                                          " data.max_eval_samples=4 data.workers=1 world.threads_per_proc=2"
                                          " output.dir=" + output));
  }

  test::TempDir dir;
  std::optional<test::HubServer> server;
};

TEST_F(Headline, PetsRecipeRunsFromNothingThenDownloadsNothing) {
  std::filesystem::create_directories(dir / "work");
  auto first = run_recipe("runs/first");
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("Training completed."), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("classifier fc.weight [1000, 2048] -> [2, 2048] re-initialised for 2 classes"),
            std::string::npos) << first.out;
  EXPECT_NE(first.out.find("precision = "), std::string::npos);
  // Hub cache in huggingface_hub's layout, the images unpacked where the recipe says.
  std::filesystem::path repo = dir / "hf/hub/models--timm--resnet50d.ra2_in1k";
  EXPECT_TRUE(std::filesystem::is_symlink(repo / "snapshots/0123456789abcdef0123456789abcdef01234567/model.safetensors"));
  EXPECT_EQ(test::read_file(repo / "refs/main"), "0123456789abcdef0123456789abcdef01234567");
  EXPECT_TRUE(std::filesystem::exists(dir / "work/data/oxford-pets/images/beagle_12.jpg"));
  EXPECT_EQ(server->count("HEAD /timm/resnet50d.ra2_in1k/resolve/main/model.safetensors"), 1);
  EXPECT_EQ(server->count("GET /cdn/"), 1) << ::testing::PrintToString(server->requests());  // the LFS blob
  EXPECT_EQ(server->count("GET /files/images.tar.gz"), 1);

  const std::size_t before = server->requests().size();
  auto second = run_recipe("runs/second");
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  auto requests = server->requests();
  for (std::size_t i = before; i < requests.size(); ++i)
    EXPECT_NE(requests[i].rfind("GET ", 0), 0u) << "downloaded again: " << requests[i];
}

// Every shipped fine-tune recipe (recipes/pets_*.yaml) runs as shipped: its model's published
// weights come from the Hub stand-in (ImageNet-shaped weights of that architecture at the repo
// `model.pretrained: true` names), the pet images from the mirror (a pets_*_shards.yaml recipe:
// written as shards first), and a couple of steps train.
class ShippedRecipe : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir / "src/images");
    torch::manual_seed(3);
    for (int i = 1; i <= 7; ++i) {  // 14 images: 11 train, 3 validation (val_fraction 0.2)
      write_image(dir / ("src/images/Abyssinian_" + std::to_string(i) + ".jpg"), torch::randint(0, 120, {60, 80, 3}, torch::kUInt8));
      write_image(dir / ("src/images/beagle_" + std::to_string(i) + ".jpg"), torch::randint(100, 256, {80, 60, 3}, torch::kUInt8));
    }
    std::filesystem::create_directories(dir / "mirror");
    ASSERT_EQ(test::run("tar -C " + (dir / "src") + " -czf " + (dir / "mirror/images.tar.gz") + " images").code, 0);
    model_name = load_recipe(test::source("recipes/" + GetParam())).node("model.name").as<std::string>();  // bases merged
    // The weights and the config.json timm's push_to_hf_hub writes beside them (eval_transforms: model reads it).
    const auto published = test::publish_weights(model_name, dir / "weights.safetensors",
                                                 "89abcdef0123456789abcdef0123456789abcdef");
    repo = published.repo;
    nlohmann::json config = {
        {"repos", {{repo, {{"revisions", published.revisions}}}}},
        {"files_dir", dir / "mirror"}};
    server.emplace(config, dir.path());
    ASSERT_GT(server->port(), 0);
  }
  test::TempDir dir;
  std::optional<test::HubServer> server;
  std::string model_name, repo;
};

TEST_P(ShippedRecipe, RunsAsShippedWithItsPublishedWeights) {
  std::filesystem::create_directories(dir / "work");
  std::string env = "cd " + (dir / "work") + " && env -u HF_HUB_CACHE -u HF_HUB_OFFLINE HF_HOME=" + (dir / "hf") +
                    " HF_ENDPOINT=" + server->url() + " TRAINRUN_DATASETS_MIRROR=" + server->url("/files") +
                    " TRAINRUN_DATASETS_MD5=images.tar.gz=" + file_md5(dir / "mirror/images.tar.gz") + " ";
  if (GetParam().find("_shards.yaml") != std::string::npos) {
    // Its comment's first command, scaled down: the pets folder (from the mirror) written as
    // shards of 2, so 6 training and 2 validation shards, as many as its patterns name.
    auto shards = test::run(env + test::trainrun("shards " + test::source("recipes/pets_resnet50d.yaml") +
                                                 " --output data/pets-shards --max-count 2"));
    ASSERT_EQ(shards.code, 0) << shards.out << shards.err;
  }
  auto r = test::run(env + test::trainrun(test::source("recipes/" + GetParam()) +
                                          " train.epochs=1 data.batch_size=4 data.max_train_samples=8"
                                          " data.max_eval_samples=4 data.workers=1 world.threads_per_proc=2"
                                          " output.dir=runs/x"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Training completed."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("re-initialised for 2 classes"), std::string::npos) << r.out;
  EXPECT_EQ(server->count("HEAD /" + repo + "/resolve/main/model.safetensors"), 1) << model_name;
  std::printf("[recipe] %s: %s from hf-hub:%s\n", GetParam().c_str(), model_name.c_str(), repo.c_str());
}

std::vector<std::string> shipped_pets_recipes() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(test::source("recipes")))
    if (e.path().filename().string().rfind("pets_", 0) == 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Recipes, ShippedRecipe, ::testing::ValuesIn(shipped_pets_recipes()), [](const auto& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);  // without .yaml
  return n;
});

}  // namespace
}  // namespace trainrun
