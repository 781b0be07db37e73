// Every registered model's structure through the CLI (tests/support/model_variants.h): trains two epochs on an image folder; a second run
// resumes from the first's epoch-1 checkpoint into another folder and ends where the first ended,
// bit for bit (losses, gradient norms, final weights); then `eval` loads the final weights. (The
// ways a run stops, SIGINT and exit 130 among them, are checkpoint_test's, on every launcher.)
// Small images (32x32; a model with an img_size option, a ViT, is built for them) keep each model
// to seconds; drop_path and dropout on, so the resumed RNG matters.
#include "components/data/image.h"
#include "components/models/model.h"

#include "support/model_variants.h"
#include "test_util.h"

#include <torch/torch.h>

#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// Two classes of RGB images, 4 training and 2 validation images each.
void write_round_trip_images(const std::string& dir) {
  torch::manual_seed(3);
  int i = 0;
  for (const std::string cls : {"ant", "bee"}) {
    for (const std::string split : {"train", "val"}) {
      fs::create_directories(dir + "/" + split + "/" + cls);
      for (int k = 0; k < (split == "train" ? 4 : 2); ++k, ++i)
        write_image(dir + "/" + split + "/" + cls + "/" + std::to_string(k) + ".png",
                    torch::randint(0, 256, {36 + 3 * (i % 3), 40, 3}, torch::kUInt8));
    }
  }
}

class ModelRoundTrip : public ::testing::TestWithParam<std::string> {
 protected:
  // 8 training images, batch 4: 2 optimizer steps per epoch, 2 epochs.
  std::string model_override() const {
    const auto& entry = Registry<Classifier>::instance().get(GetParam());
    bool sized = false, drop_path = false;
    for (auto& p : entry.schema.params()) {
      sized |= p.name == "img_size";
      drop_path |= p.name == "drop_path_rate";
    }
    return "'model={name: " + GetParam() + ", num_classes: auto, pretrained: null" + (sized ? ", img_size: 32" : "") +
           (drop_path ? ", drop_path_rate: 0.1" : "") + "}'";
  }
  std::string args(const std::string& run) const {
    return test::trainrun((dir / "recipe.yaml") + " " + model_override() + " output.dir=" + (dir / run));
  }
  void SetUp() override {
    write_round_trip_images(dir / "images");
    test::write_file(dir / "recipe.yaml", "name: round_trip\nseed: 1\nmodel: {name: basicnet}\n"
                     "data:\n  dataset: {name: image_folder, root: " + (dir / "images/train") +
                     ", val_root: " + (dir / "images/val") + "}\n"
                     "  train_transforms: [{random_resized_crop: {size: 32}}, random_horizontal_flip, to_tensor, "
                     "{normalize: {mean: model, std: model}}]\n"
                     "  eval_transforms: [{resize: {size: 36}}, {center_crop: {size: 32}}, to_tensor, "
                     "{normalize: {mean: model, std: model}}]\n"
                     "  batch_size: 4\n  workers: 1\n"
                     "optimizer: {name: adamw, lr: 0.001}\n"
                     "train: {epochs: 2, eval_every: epoch, log_every_steps: 1}\n"
                     "world: {nproc_per_node: 1, threads_per_proc: 1}\n");
  }
  test::TempDir dir;
};

TEST_P(ModelRoundTrip, TrainSaveResumeEqualsOneRunAndTheWeightsLoad) {
  auto full = test::run(args("full"));
  ASSERT_EQ(full.code, 0) << full.out << full.err;
  ASSERT_TRUE(fs::exists(dir / "full/checkpoint-2")) << full.out;
  auto resumed = test::run(args("split") + " output.resume=" + (dir / "full/checkpoint-2"));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Continuing training from epoch 1"), std::string::npos) << resumed.out;
  // The resumed run's metrics.jsonl starts with the checkpoint's history (steps 1-2) and goes on
  // with steps 3-4 it computed: the full run's values at every step.
  for (const char* key : {"loss", "grad_norm", "eval_loss"}) {
    auto a = test::by_step(dir / "full/metrics.jsonl", key), b = test::by_step(dir / "split/metrics.jsonl", key);
    EXPECT_TRUE(b.count(4)) << key;
    EXPECT_EQ(a, b) << key;
  }
  std::string weights = test::read_file(dir / "full/model.safetensors");
  ASSERT_FALSE(weights.empty());
  EXPECT_TRUE(weights == test::read_file(dir / "split/model.safetensors")) << "final weights differ";

  // The saved weights load into a fresh model (strict keys and shapes) and evaluate as the run did.
  double accuracy = test::by_step(dir / "full/metrics.jsonl", "eval_accuracy").rbegin()->second;
  test::eval_printing_accuracy((dir / "recipe.yaml") + " --checkpoint " + (dir / "full/model.safetensors") + " " +
                               model_override(), accuracy);
}

// Each family's structures (tests/support/model_variants.h says which variants they leave out).
std::vector<std::string> round_trip_models() {
  std::vector<std::string> names;
  for (const auto& name : test::every_model_pass(Registry<Classifier>::instance().names()))
    if (name != "basicnet") names.push_back(name);  // MNIST's 28x28 one-channel net: checkpoint_test's
  return names;
}

INSTANTIATE_TEST_SUITE_P(Models, ModelRoundTrip, ::testing::ValuesIn(round_trip_models()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trainrun
