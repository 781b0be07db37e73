// efficientnet_b0..b3 and mobilenetv3_large_100 beyond what TimmModels checks (keys, shapes,
// seeded init, eval logits, pretrained config, layer ids against timm): the architecture timm's
// builder makes from the block strings under each width / depth multiplier, and activation
// checkpointing (timm's set_grad_checkpointing) in a training step with stochastic depth.
#include "components/models/model.h"
#include "runner/io/weights.h"
#include "runner/train/activation_checkpointing.h"

#include "make_model.h"
#include "test_util.h"

#include <torch/torch.h>

#include <cstdio>
#include <map>

namespace trainrun {
namespace {

std::map<std::string, at::Tensor> parameters_of(const Classifier& model) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : model.named_parameters()) out[p.key()] = p.value();
  return out;
}

struct Architecture {
  std::string name;
  int64_t parameters;
  std::vector<int64_t> blocks_per_stage;
  int64_t head_in, head_out;  // conv_head's channels
};

// timm (aa4b5850c154) prints these: sum(p.numel() for p in m.parameters()),
// [len(s) for s in m.blocks], m.conv_head.in_channels / out_channels.
const std::vector<Architecture> kArchitectures = {
    {"efficientnet_b0", 5288548, {1, 2, 2, 3, 3, 4, 1}, 320, 1280},
    {"efficientnet_b1", 7794184, {2, 3, 3, 4, 4, 5, 2}, 320, 1280},
    {"efficientnet_b2", 9109994, {2, 3, 3, 4, 4, 5, 2}, 352, 1408},
    {"efficientnet_b3", 12233232, {2, 3, 3, 5, 5, 6, 2}, 384, 1536},
    {"mobilenetv3_large_100", 5483032, {1, 2, 3, 4, 2, 3, 1}, 960, 1280},
};

class EfficientNetArchitecture : public ::testing::TestWithParam<Architecture> {};

// Depth multipliers (ceil of the repeats), width multipliers (round_channels) and the SE widths
// (from the block input for EfficientNet, from the expanded channels for MobileNetV3) as timm's.
TEST_P(EfficientNetArchitecture, StagesWidthsAndParameterCountAreTimms) {
  const Architecture& a = GetParam();
  auto model = test::make_model(a.name);
  auto params = parameters_of(*model);
  int64_t count = 0;
  for (const auto& [_, p] : params) count += p.numel();
  EXPECT_EQ(count, a.parameters);
  for (std::size_t s = 0; s < a.blocks_per_stage.size(); ++s) {
    std::string stage = "blocks." + std::to_string(s) + ".";
    EXPECT_EQ(params.count(stage + std::to_string(a.blocks_per_stage[s] - 1) + ".bn1.weight"), 1u) << stage;
    EXPECT_EQ(params.count(stage + std::to_string(a.blocks_per_stage[s]) + ".bn1.weight"), 0u) << stage;
  }
  EXPECT_EQ(params.at("conv_head.weight").sizes(), (std::vector<int64_t>{a.head_out, a.head_in, 1, 1}));
  EXPECT_EQ(model->checkpoint_stages().size(), a.blocks_per_stage.size());
}

INSTANTIATE_TEST_SUITE_P(Models, EfficientNetArchitecture, ::testing::ValuesIn(kArchitectures),
                         [](const auto& info) { return info.param.name; });

TEST(EfficientNet, SqueezeExciteWidthsAndHeadsAreTimms) {
  auto b0 = parameters_of(*test::make_model("efficientnet_b0"));
  // se_ratio 0.25 of the block input (16 -> expanded 96 -> SE 4), Python's round of 96 * 0.25 / 6.
  EXPECT_EQ(b0.at("blocks.1.0.se.conv_reduce.weight").sizes(), (std::vector<int64_t>{4, 96, 1, 1}));
  EXPECT_EQ(b0.at("blocks.0.0.se.conv_reduce.weight").sizes(), (std::vector<int64_t>{8, 32, 1, 1}));
  EXPECT_EQ(b0.count("conv_head.bias"), 0u);
  EXPECT_EQ(b0.count("bn2.weight"), 1u);
  auto mnv3 = parameters_of(*test::make_model("mobilenetv3_large_100"));
  // 0.25 of the expanded 72, rounded by round_channels (18 -> 24), and no SE where timm has none.
  EXPECT_EQ(mnv3.at("blocks.2.0.se.conv_reduce.weight").sizes(), (std::vector<int64_t>{24, 72, 1, 1}));
  EXPECT_EQ(mnv3.count("blocks.1.0.se.conv_reduce.weight"), 0u);
  EXPECT_EQ(mnv3.at("blocks.3.1.conv_pw.weight").sizes(), (std::vector<int64_t>{200, 80, 1, 1}));  // e2.5
  EXPECT_EQ(mnv3.at("blocks.6.0.conv.weight").sizes(), (std::vector<int64_t>{960, 160, 1, 1}));
  EXPECT_EQ(mnv3.count("conv_head.bias"), 1u);  // the efficient head: biased, no BN
  EXPECT_EQ(mnv3.count("bn2.weight"), 0u);
}

// A training step with stochastic depth and dropout, every stage checkpointed against none: the
// same logits and gradients bit for bit and the same BatchNorm statistics (the masks replayed).
class EfficientNetCheckpointing : public ::testing::TestWithParam<std::string> {};

TEST_P(EfficientNetCheckpointing, GradientsAndStatisticsEqualThePlainRun) {
  torch::manual_seed(4);
  auto model = test::make_model(GetParam(), "{num_classes: 10, drop_rate: 0.2, drop_path_rate: 0.2}");
  at::Tensor x = torch::randn({2, 3, 64, 64}), dy = torch::randn({2, 10});
  TensorList initial = state_dict(*model);
  for (auto& [_, t] : initial) t = t.detach().clone();
  auto step = [&]() {
    model->train();
    model->zero_grad();
    torch::manual_seed(11);
    at::Tensor logits = model->forward(x);
    (logits * dy).sum().backward();
    std::map<std::string, at::Tensor> out{{"logits", logits.detach()}};
    for (auto& p : model->named_parameters()) out["grad." + p.key()] = p.value().grad().clone();
    for (auto& [key, t] : state_dict(*model)) out[key] = t.detach().clone();
    return out;
  };
  auto plain = step();
  load_state_dict(*model, initial, "initial");
  set_activation_checkpointing(*model, model->checkpoint_stages());
  auto checkpointed = step();
  set_activation_checkpointing(*model, {});
  ASSERT_EQ(plain.size(), checkpointed.size());
  int differing = 0;
  for (auto& [key, value] : plain) differing += !torch::equal(value, checkpointed.at(key));
  EXPECT_EQ(differing, 0);
  std::printf("[ measured ] %s, every stage checkpointed: %d of %zu tensors differ from the plain step\n",
              GetParam().c_str(), differing, plain.size());
}

INSTANTIATE_TEST_SUITE_P(Models, EfficientNetCheckpointing, ::testing::Values("efficientnet_b0", "mobilenetv3_large_100"));

}  // namespace
}  // namespace trainrun
