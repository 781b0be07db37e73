// The trainrun binary on generated pets and STL-10 folders: `check` prints class counts and
// split sizes, one epoch trains and evaluates, and a corrupt image is skipped or fatal as
// data.on_bad_file says.
#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>

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

}  // namespace
}  // namespace trainrun
