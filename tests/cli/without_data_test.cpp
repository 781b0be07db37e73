// predict and export build only what they use (issue 43, item 1): the recipe's model, the run's
// labels.json and the eval pipeline, never the dataset. With the dataset folder gone, or holding
// one image (too few for the recipe's val_fraction), they print the same lines and write the
// same bytes as with it; a weights file alone (no labels.json) numbers the outputs and counts
// the classes from the weights' classifier head. eval still needs its split and says so.
#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPetsNoDataRecipe = R"(
model: {name: basicnet, num_classes: auto}
data:
  dataset: {name: pets_folder, root: ROOT, val_fraction: 0.25, channels: 1}
  train_transforms: [{resize: {size: [28, 28]}}, to_tensor, normalize]
  eval_transforms: [{resize: {size: 32}}, {center_crop: {size: 28}}, to_tensor, normalize]
  batch_size: 4
  workers: 0
train: {epochs: 1, loss: nll, log_every_steps: 1}
optimizer: {name: adam, lr: 1.0e-3}
world: {nproc_per_node: 1}
)";

class WithoutData : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir / "pets");
    torch::manual_seed(0);
    for (const char* breed : {"Abyssinian", "beagle", "pug"})
      for (int i = 1; i <= 6; ++i)
        write_image(dir / "pets" + "/" + breed + "_" + std::to_string(i) + ".jpg",
                    torch::randint(0, 256, {30 + i, 34, 3}, torch::kUInt8));
    std::string text = kPetsNoDataRecipe;
    text.replace(text.find("ROOT"), 4, dir / "pets");
    test::write_file(recipe, text);
    auto r = test::run(test::trainrun(recipe + " output.dir=" + (dir / "run")));
    ASSERT_EQ(r.code, 0) << r.err;
    // The images predict reads live outside the dataset folder, which the tests take away.
    fs::create_directories(dir / "in");
    for (const char* f : {"pug_2.jpg", "beagle_5.jpg"}) fs::copy_file(dir / "pets" + "/" + f, dir / "in" + "/" + f);
    images = (dir / "in/pug_2.jpg") + " " + (dir / "in/beagle_5.jpg");
  }

  struct Outputs {
    test::RunResult predict, torchscript, onnx;
    std::string torchscript_bytes, onnx_bytes;
  };

  // predict, and export in both formats, of the run's final weights (or of `weights`).
  Outputs outputs(const std::string& tag, const std::string& weights = "") {
    const std::string w = weights.empty() ? dir / "run/model.safetensors" : weights;
    Outputs o;
    o.predict = test::run(test::trainrun("predict " + recipe + " --top-k 2 --checkpoint " + w + " " + images));
    o.torchscript = test::run(test::trainrun("export " + recipe + " --checkpoint " + w + " --format torchscript --output " +
                                             (dir / (tag + ".pt"))));
    o.onnx = test::run(test::trainrun("export " + recipe + " --checkpoint " + w + " --format onnx --output " + (dir / (tag + ".onnx"))));
    if (o.torchscript.code == 0) o.torchscript_bytes = test::read_file(dir / (tag + ".pt"));
    if (o.onnx.code == 0) o.onnx_bytes = test::read_file(dir / (tag + ".onnx"));
    return o;
  }

  test::TempDir dir;
  std::string recipe = dir / "pets.yaml";
  std::string images;
};

TEST_F(WithoutData, PredictAndExportGiveTheSameLinesAndBytesWithTheDatasetGoneOrTooSmall) {
  const Outputs with = outputs("with");
  ASSERT_EQ(with.predict.code, 0) << with.predict.err;
  ASSERT_EQ(with.torchscript.code, 0) << with.torchscript.err;
  ASSERT_EQ(with.onnx.code, 0) << with.onnx.err;
  ASSERT_EQ(test::count_lines(with.predict.out), 2) << with.predict.out;
  EXPECT_NE(with.predict.out.find("\"label\":\""), std::string::npos);

  fs::rename(dir / "pets", dir / "elsewhere");
  const Outputs gone = outputs("gone");
  EXPECT_EQ(gone.predict.code, 0) << gone.predict.err;
  EXPECT_EQ(gone.predict.out, with.predict.out);
  EXPECT_EQ(gone.torchscript.code, 0) << gone.torchscript.err;
  EXPECT_EQ(gone.onnx.code, 0) << gone.onnx.err;
  EXPECT_TRUE(gone.torchscript_bytes == with.torchscript_bytes) << "TorchScript files differ";
  EXPECT_TRUE(gone.onnx_bytes == with.onnx_bytes) << "ONNX files differ";

  // One image: a training run would stop at val_fraction; predict and export do not look.
  fs::create_directories(dir / "pets");
  fs::copy_file(dir / "elsewhere/pug_1.jpg", dir / "pets/pug_1.jpg");
  const Outputs one = outputs("one");
  EXPECT_EQ(one.predict.out, with.predict.out) << one.predict.err;
  EXPECT_TRUE(one.torchscript_bytes == with.torchscript_bytes) << one.torchscript.err;
  EXPECT_TRUE(one.onnx_bytes == with.onnx_bytes) << one.onnx.err;

  // eval needs its split and says which folder is missing (bad input, exit 2).
  fs::remove_all(dir / "pets");
  auto eval = test::run(test::trainrun("eval " + recipe + " --checkpoint " + (dir / "run/model.safetensors")));
  EXPECT_EQ(eval.code, 2);
  EXPECT_NE(eval.err.find((dir / "pets") + ": no such folder"), std::string::npos) << eval.err;
}

TEST_F(WithoutData, AWeightsFileAloneNumbersTheOutputsAndCountsTheClassesFromTheHead) {
  const Outputs with = outputs("with");
  ASSERT_EQ(with.predict.code, 0) << with.predict.err;
  fs::remove_all(dir / "pets");
  fs::create_directories(dir / "bare");
  fs::copy_file(dir / "run/model.safetensors", dir / "bare/w.safetensors");
  const Outputs bare = outputs("bare", dir / "bare/w.safetensors");
  ASSERT_EQ(bare.predict.code, 0) << bare.predict.err;
  std::istringstream a(with.predict.out), b(bare.predict.out);
  std::string la, lb;
  int lines = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    auto ja = nlohmann::json::parse(la), jb = nlohmann::json::parse(lb);
    EXPECT_EQ(jb["index"], ja["index"]);
    EXPECT_EQ(jb["label"], std::to_string(ja["index"].get<int>()));  // no labels.json: the index
    EXPECT_EQ(jb["logits"], ja["logits"]);  // 3 outputs: num_classes from fc2.weight's rows
    EXPECT_EQ(jb["logits"].size(), 3u);
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  EXPECT_EQ(bare.torchscript.code, 0) << bare.torchscript.err;
  EXPECT_EQ(bare.onnx.code, 0) << bare.onnx.err;

  // Weights without the model's classifier: one line naming the file and what to give.
  test::write_file(dir / "bare/empty.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
  auto r = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "bare/empty.safetensors") + " " + images));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("model.num_classes: auto: no labels.json beside " + (dir / "bare/empty.safetensors")), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace trainrun
