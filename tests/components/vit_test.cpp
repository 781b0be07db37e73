// The ViTs (components/models/vit.cpp) beyond what TimmModels checks against timm at 224: a
// pos_embed of another grid resampled as timm's resample_abs_pos_embed (numbers from the real
// timm, tests/py/vit_resample_ref.py), the same through `model.pretrained` and the binary with
// `eval_transforms: model` at the model's img_size, the input size check, and activation
// checkpointing with stochastic depth (the plain run's gradients bit for bit).
#include "components/data/image.h"
#include "components/models/model.h"
#include "runner/io/weights.h"
#include "runner/recipe/param_groups.h"
#include "runner/train/activation_checkpointing.h"
#include "support/hub_server.h"
#include "support/safetensors.h"
#include "make_model.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

at::Tensor floats(const json& values, const std::vector<int64_t>& shape) {
  return torch::tensor(values.get<std::vector<float>>()).reshape(shape);
}

TEST(ViT, PretrainedPosEmbedIsResampledAsTimm) {
  std::ifstream in(test::source("tests/data/vit_pos_embed_resample.json"));
  const json ref = json::parse(in);
  const at::Tensor input = floats(ref["input"], ref["input_shape"].get<std::vector<int64_t>>());
  ASSERT_EQ(ref["cases"].size(), 2u);
  for (const json& c : ref["cases"]) {
    const int64_t img = c["img_size"], grid = c["grid"];
    auto model = test::make_model("vit_tiny_patch16_224", "{img_size: " + std::to_string(img) + "}");
    TensorList tensors{{"pos_embed", input.clone()}, {"head.bias", torch::zeros({10})}};
    const std::vector<std::string> notes = model->adapt_pretrained(tensors);
    EXPECT_EQ(notes, (std::vector<std::string>{"pos_embed resampled from a 14x14 grid to " + std::to_string(grid) + "x" +
                                               std::to_string(grid) + " (bicubic, antialias; img_size " + std::to_string(img) + ")"}));
    const at::Tensor want = floats(c["pos_embed"], c["shape"].get<std::vector<int64_t>>());
    const at::Tensor& got = tensors[0].second;
    ASSERT_EQ(got.sizes(), want.sizes());
    const double diff = (got - want).abs().max().item<double>();
    std::printf("[ measured ] pos_embed 14x14 -> %ldx%ld: max |ours - timm| = %g (max |timm| %g)\n", long(grid), long(grid), diff,
                want.abs().max().item<double>());
    EXPECT_LE(diff, 1e-7);  // the same ATen kernel (_upsample_bicubic2d_aa) on the same float32 grid
    EXPECT_TRUE(torch::equal(got.slice(1, 0, 1), input.slice(1, 0, 1)));  // the class token's entry as it was
    EXPECT_TRUE(torch::equal(tensors[1].second, torch::zeros({10})));       // nothing else touched
  }
  // Weights of this model's own grid come through untouched.
  auto model = test::make_model("vit_tiny_patch16_224", "{}");
  TensorList same{{"pos_embed", torch::randn({1, 197, 192})}};
  const at::Tensor before = same[0].second.clone();
  EXPECT_TRUE(model->adapt_pretrained(same).empty());
  EXPECT_TRUE(torch::equal(same[0].second, before));
}

TEST(ViT, InputOfAnotherSizeIsAnErrorNamingImgSize) {
  auto model = test::make_model("vit_tiny_patch16_224", "{img_size: 32, num_classes: 10}");
  EXPECT_EQ(model->input_config().input_size, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_TRUE(model->input_config().fixed_input_size);
  EXPECT_EQ(model->named_parameters()["pos_embed"].sizes(), (std::vector<int64_t>{1, 5, 192}));
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(torch::zeros({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  try {
    model->forward(torch::zeros({1, 3, 48, 32}));
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "vision transformer built for 32x32 inputs (model.img_size) got 48x32");
  }
}

// timm's group_parameters(model, model.group_matcher(coarse=False), reverse=True) for
// vit_tiny_patch16_224 (timm 1.0.29.dev0): the embeddings 0, blocks.N N + 1, the final norm in the
// last block's layer (its MATCH_PREV_GROUP), the head after it: 14 layers.
TEST(ViT, LayerIdsAreTimms) {
  auto model = test::make_model("vit_tiny_patch16_224", "{}");
  const LayerIds ids = layer_ids(*model);
  EXPECT_EQ(ids.count, 14);
  const std::map<std::string, int64_t> want = {{"cls_token", 0}, {"pos_embed", 0}, {"patch_embed.proj.weight", 0},
                                               {"blocks.0.norm1.weight", 1}, {"blocks.9.attn.qkv.bias", 10},
                                               {"blocks.11.mlp.fc2.bias", 12}, {"norm.weight", 12}, {"norm.bias", 12},
                                               {"head.weight", 13}, {"head.bias", 13}};
  for (const auto& [name, id] : want) EXPECT_EQ(ids.of(name), id) << name;
}

// timm's set_grad_checkpointing (every block, torch.utils.checkpoint) with stochastic depth in
// training mode: the logits and every gradient are the plain run's, bit for bit, since the
// recompute replays the RNG.
TEST(ViT, CheckpointedBlocksGiveThePlainRunsGradients) {
  torch::manual_seed(3);
  auto model = test::make_model("vit_tiny_patch16_224", "{img_size: 32, num_classes: 10, drop_path_rate: 0.3, drop_rate: 0.2}");
  EXPECT_EQ(model->checkpoint_stages(), (std::vector<std::string>{"blocks"}));
  const at::Tensor x = torch::randn({4, 3, 32, 32}), dy = torch::randn({4, 10});
  auto step = [&] {
    model->train();
    model->zero_grad();
    torch::manual_seed(11);
    at::Tensor logits = model->forward(x);
    (logits * dy).sum().backward();
    std::map<std::string, at::Tensor> grads;
    for (auto& p : model->named_parameters()) grads[p.key()] = p.value().grad().clone();
    return std::make_pair(logits.detach(), grads);
  };
  auto [plain_logits, plain] = step();
  set_activation_checkpointing(*model, model->checkpoint_stages());
  auto [logits, checkpointed] = step();
  set_activation_checkpointing(*model, {});
  EXPECT_TRUE(torch::equal(plain_logits, logits));
  for (auto& [key, g] : plain) EXPECT_TRUE(torch::equal(g, checkpointed.at(key))) << key;
  EXPECT_GT(plain.at("blocks.0.attn.qkv.weight").abs().max().item<double>(), 0.0);
}

// model.pretrained made at one img_size into a model of another, through the binary and a Hub
// stand-in (tests/py/hub_server.py): the note says the grid was resampled, and eval_transforms:
// model takes the config.json's crop_pct, interpolation and mean/std but crops to the model's size.
TEST(ViT, HubWeightsOfAnotherSizeAreResampledAndEvaluatedAtImgSize) {
  test::TempDir dir;
  fs::create_directories(dir / "pets");
  torch::manual_seed(0);
  for (int i = 1; i <= 4; ++i) {
    write_image(dir / ("pets/beagle_" + std::to_string(i) + ".jpg"), torch::randint(0, 256, {40, 50, 3}, torch::kUInt8));
    write_image(dir / ("pets/pug_" + std::to_string(i) + ".jpg"), torch::randint(0, 256, {50, 40, 3}, torch::kUInt8));
  }
  save_safetensors(dir / "weights.safetensors", state_dict(*test::make_model("vit_tiny_patch16_224", "{img_size: 32, num_classes: 10}")));
  const json config_json = {{"architecture", "vit_tiny_patch16_224"}, {"num_classes", 10},
                            {"pretrained_cfg", {{"input_size", {3, 32, 32}}, {"interpolation", "bicubic"}, {"crop_pct", 0.9},
                                                {"crop_mode", "center"}, {"mean", {0.5, 0.5, 0.5}}, {"std", {0.5, 0.5, 0.5}},
                                                {"num_classes", 10}, {"fixed_input_size", true}}}};
  const json hub = {{"repos", {{"test/vit", {{"revisions", {{"main", {{"commit", "0123456789abcdef0123456789abcdef01234567"},
      {"files", {{"model.safetensors", {{"path", dir / "weights.safetensors"}}},
                 {"config.json", {{"text", config_json.dump(2)}, {"lfs", false}}}}}}}}}}}}}};
  test::HubServer server(hub, dir.path());
  ASSERT_GT(server.port(), 0);
  test::write_file(dir / "r.yaml", "model: {name: vit_tiny_patch16_224, img_size: 64, pretrained: 'hf-hub:test/vit'}\n"
                                   "data:\n  dataset: {name: pets_folder, root: " + (dir / "pets") + ", val_fraction: 0.5}\n"
                                   "  train_transforms: [{resize: {size: [64, 64]}}, to_tensor]\n"
                                   "  eval_transforms: model\n"
                                   "world: {nproc_per_node: 1, threads_per_proc: 1}\n");
  auto r = test::run("env -u HF_HUB_CACHE -u HF_TOKEN -u HF_HUB_OFFLINE HF_HOME=" + (dir / "hf") + " HF_ENDPOINT=" + server.url() +
                     " " + test::trainrun("check --download " + (dir / "r.yaml")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: model.pretrained: pos_embed resampled from a 2x2 grid to 4x4 (bicubic, antialias; img_size 64)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: classifier head.weight [10, 192] -> [2, 192] re-initialised for 2 classes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eval transforms (data.eval_transforms: model, from hf-hub:test/vit@main: config.json at the model's "
                       "input_size (input_size [3, 64, 64], interpolation bicubic, crop_pct 0.9, crop_mode center)):\n"
                       "  resize {size: 71, max_size: ~, interpolation: bicubic}\n  center_crop {size: [64, 64]}\n"),
            std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainrun
