// The trainrun binary on generated pets, STL-10 and image folders: `check` prints class counts
// and split sizes, one epoch trains and evaluates, a corrupt image is skipped or fatal as
// data.on_bad_file says, and an imbalanced folder trains with balanced loss weights and the
// weighted sampler.
#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// 20 pets-like photos of two breeds, a .txt decoy and (optionally) a corrupt .jpg.
void write_pets(const std::string& dir, bool corrupt) {
  fs::create_directories(dir);
  torch::manual_seed(0);
  for (int i = 1; i <= 10; ++i) {
    write_image(dir + "/american_bulldog_" + std::to_string(i) + ".jpg", torch::randint(0, 256, {37, 50, 3}, torch::kUInt8));
    write_image(dir + "/Abyssinian_" + std::to_string(i) + ".jpg", torch::randint(0, 120, {50, 37, 3}, torch::kUInt8));
  }
  test::write_file(dir + "/list.txt", "a decoy");
  if (corrupt) test::write_file(dir + "/Abyssinian_77.jpg", "not a jpeg at all");
}

constexpr const char* kPetsRecipe = R"(
model: {name: basicnet, num_classes: auto}
data:
  dataset: {name: pets_folder, root: ROOT, val_fraction: 0.25, channels: 1}
  train_transforms: [{random_resized_crop: {size: 28, scale: [0.5, 1.0]}}, random_horizontal_flip, to_tensor, normalize]
  eval_transforms: [{resize: {size: 32}}, {center_crop: {size: 28}}, to_tensor, normalize]
  batch_size: 4
  workers: 2
train: {epochs: 1, loss: nll, log_every_steps: 1}
optimizer: {name: adam, lr: 1.0e-3}
)";

std::string pets_recipe(const test::TempDir& dir) {
  std::string text = kPetsRecipe;
  text.replace(text.find("ROOT"), 4, dir / "pets");
  test::write_file(dir / "pets.yaml", text);
  return dir / "pets.yaml";
}

TEST(DataEndToEnd, PetsCheckPrintsClassesAndSplitsAndOneEpochTrains) {
  test::TempDir dir;
  write_pets(dir / "pets", true);
  auto check = test::run(test::trainrun("check " + pets_recipe(dir)));
  ASSERT_EQ(check.code, 0) << check.err;
  std::string all = check.out + check.err;
  EXPECT_NE(all.find("pets_folder: skipped 1 files that do not match label_regex"), std::string::npos) << all;
  EXPECT_NE(check.out.find("data: pets_folder, 2 classes, 15 train / 6 validation examples"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("train class counts: Abyssinian: "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("on_bad_file: skip"), std::string::npos) << check.out;

  auto r = test::run(test::trainrun(pets_recipe(dir) + " output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("Abyssinian_77.jpg: cannot decode"), std::string::npos) << r.out << r.err;
  bool eval_line = false;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl")) eval_line |= l.contains("eval_accuracy");
  EXPECT_TRUE(eval_line);
  auto labels = nlohmann::json::parse(test::read_file(dir / "run/labels.json"));
  EXPECT_EQ(labels["0"], "Abyssinian");
  EXPECT_EQ(labels["1"], "american_bulldog");

  auto fatal = test::run(test::trainrun(pets_recipe(dir) + " data.on_bad_file=error output.dir=" + (dir / "run2")));
  EXPECT_EQ(fatal.code, 1);
  EXPECT_NE(fatal.err.find("Abyssinian_77.jpg: cannot decode"), std::string::npos) << fatal.err;
}

// data.on_bad_file: skip in a 2-process run: the rank that meets the corrupt file warns and goes
// on, every rank finishes the epoch, and evaluation counts each readable example once. The split
// is torch.randperm(21) over the sorted files, where Abyssinian_77.jpg is index 8: split_seed 1
// puts it in training, 13 in validation (6 -> 5 evaluated examples).
TEST(DataEndToEnd, TwoProcessesSkipACorruptImageInTrainingOrInEvaluation) {
  test::TempDir dir;
  write_pets(dir / "pets", true);
  for (auto [seed, evaluated] : {std::pair<int, int64_t>{1, 6}, {13, 5}}) {
    std::string out = dir / ("run" + std::to_string(seed));
    auto r = test::run(test::trainrun(pets_recipe(dir) + " world.nproc_per_node=2 world.master_port=0 " +
                                      "data.dataset.split_seed=" + std::to_string(seed) + " output.dir=" + out));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE((r.out + r.err).find("skipped an unreadable example (1 so far): " + (dir / "pets/Abyssinian_77.jpg")),
              std::string::npos) << r.out << r.err;
    int64_t examples = -1;
    bool finished = false;
    for (auto& l : test::read_jsonl(out + "/metrics.jsonl")) {
      if (l.contains("eval_examples")) examples = l["eval_examples"].get<int64_t>();
      finished |= l.contains("train_runtime");
    }
    EXPECT_EQ(examples, evaluated) << "split_seed " << seed;
    EXPECT_TRUE(finished);
  }
}

TEST(DataEndToEnd, MissingFolderAndUnmatchedRegexAreBadInput) {
  test::TempDir dir;
  auto r = test::run(test::trainrun("check " + pets_recipe(dir)));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pets: no such folder"), std::string::npos) << r.err;
  write_pets(dir / "pets", false);
  r = test::run(test::trainrun("check " + pets_recipe(dir) + " 'data.dataset.label_regex=^(.*)-\\d+\\.png$'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no file matches label_regex"), std::string::npos) << r.err;
}

// The shipped recipes validate and run on tiny generated data.
TEST(DataEndToEnd, Stl10RecipeChecksAndOneEpochTrains) {
  test::TempDir dir;
  fs::create_directories(dir / "stl10_binary");
  torch::manual_seed(0);
  for (auto [split, n] : {std::pair<std::string, int64_t>{"train", 12}, {"test", 6}}) {
    at::Tensor x = torch::randint(0, 256, {n * 3 * 96 * 96}, torch::kUInt8);
    at::Tensor y = torch::arange(n, torch::kLong).remainder(10).add(1).to(torch::kUInt8);
    test::write_file(dir / ("stl10_binary/" + split + "_X.bin"), std::string((const char*)x.data_ptr(), size_t(x.numel())));
    test::write_file(dir / ("stl10_binary/" + split + "_y.bin"), std::string((const char*)y.data_ptr(), size_t(y.numel())));
  }
  std::string recipe = test::source("recipes/stl10_resnet18.yaml") + " data.dataset.root=" + (dir / "stl10_binary");
  auto check = test::run(test::trainrun("check " + recipe));
  ASSERT_EQ(check.code, 0) << check.err;
  EXPECT_NE(check.out.find("data: stl10, 10 classes, 12 train / 6 test examples"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("train class counts: airplane: 2, bird: 2, car: 1"), std::string::npos) << check.out;

  std::string small = " 'data.train_transforms=[{resize: {size: 32}}, random_horizontal_flip, to_tensor, normalize]' "
                      "'data.eval_transforms=[{resize: {size: 32}}, to_tensor, normalize]' data.batch_size=4 "
                      "train.epochs=1 world.nproc_per_node=1 output.dir=" + (dir / "run");
  auto r = test::run(test::trainrun(recipe + small));
  ASSERT_EQ(r.code, 0) << r.err;
  bool eval_line = false;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl")) eval_line |= l.contains("eval_top5");
  EXPECT_TRUE(eval_line);
}

TEST(DataEndToEnd, PetsRecipeChecks) {
  test::TempDir dir;
  write_pets(dir / "pets", false);
  auto r = test::run(test::trainrun("check " + test::source("recipes/pets_resnet50d.yaml") + " data.dataset.root=" +
                                    (dir / "pets") + " model.pretrained=null precision=fp32"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("data: pets_folder, 2 classes, 16 train / 4 validation examples"), std::string::npos) << r.out;
}

// An image_folder of three classes: 12 / 4 / 2 training images (cat, dog, owl) and 2 validation
// images of each.
void write_imbalanced_folders(const std::string& dir) {
  torch::manual_seed(3);
  for (auto [name, n] : {std::pair<std::string, int>{"cat", 12}, {"dog", 4}, {"owl", 2}}) {
    fs::create_directories(dir + "/train/" + name);
    fs::create_directories(dir + "/val/" + name);
    for (int i = 0; i < n; ++i)
      write_image(dir + "/train/" + name + "/" + std::to_string(i) + ".png", torch::randint(0, 256, {30, 30, 3}, torch::kUInt8));
    for (int i = 0; i < 2; ++i)
      write_image(dir + "/val/" + name + "/" + std::to_string(i) + ".png", torch::randint(0, 256, {30, 30, 3}, torch::kUInt8));
  }
}

constexpr const char* kImbalancedRecipe = R"(
model: {name: basicnet, num_classes: auto}
data:
  dataset: {name: image_folder, root: ROOT/train, val_root: ROOT/val, channels: 1}
  train_transforms: [{resize: {size: [28, 28]}}, to_tensor, normalize]
  eval_transforms: [{resize: {size: [28, 28]}}, to_tensor, normalize]
  sampler: weighted
  batch_size: 3
  workers: 2
train: {epochs: 2, loss: {name: nll, weight: balanced}, log_every_steps: 1}
optimizer: {name: adam, lr: 1.0e-3}
)";

// train.loss.weight: balanced and data.sampler: weighted in a 2-process run: the resolved recipe
// holds sklearn's weights for the training labels (18 / (3 x 12), 18 / (3 x 4), 18 / (3 x 2)), the
// banner names the sampler, both epochs train and evaluate, and the resolved recipe checks as is.
TEST(DataEndToEnd, ImbalancedFolderTrainsWithBalancedLossAndWeightedSampler) {
  test::TempDir dir;
  write_imbalanced_folders(dir / "data");
  std::string text = kImbalancedRecipe;
  for (std::size_t at; (at = text.find("ROOT")) != std::string::npos;) text.replace(at, 4, dir / "data");
  test::write_file(dir / "imbalanced.yaml", text);
  auto r = test::run(test::trainrun((dir / "imbalanced.yaml") + " world.nproc_per_node=2 world.master_port=0 output.dir=" +
                                    (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Sampler = weighted (18 draws per epoch with replacement, each example weighted 1 / its class's count)"),
            std::string::npos) << r.out;
  int64_t evaluations = 0;
  bool finished = false;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl")) {
    if (l.contains("eval_loss")) ++evaluations;
    finished |= l.contains("train_runtime");
  }
  EXPECT_EQ(evaluations, 2);
  EXPECT_TRUE(finished);

  YAML::Node resolved = YAML::LoadFile(dir / "run/recipe.resolved.yaml");
  EXPECT_EQ(resolved["data"]["sampler"].as<std::string>(), "weighted");
  std::vector<int64_t> labels(12, 0);
  labels.insert(labels.end(), 4, 1);
  labels.insert(labels.end(), 2, 2);
  test::write_file(dir / "labels.json", nlohmann::json(labels).dump());
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/class_weight.py") + " " +
                      (dir / "labels.json") + " 3");
  ASSERT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(resolved["train"]["loss"]["weight"].as<std::vector<double>>(),
            nlohmann::json::parse(py.out).get<std::vector<double>>());
  EXPECT_EQ(resolved["train"]["loss"]["weight"].as<std::vector<double>>(), (std::vector<double>{0.5, 1.5, 3.0}));

  auto again = test::run(test::trainrun("check " + (dir / "run/recipe.resolved.yaml")));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("train class counts: cat: 12, dog: 4, owl: 2"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace trainrun
