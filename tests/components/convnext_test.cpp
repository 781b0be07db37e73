// ConvNeXt beyond what TimmModels checks against timm (keys, seeded init, layer ids, eval logits):
// set_grad_checkpointing's equal to the plain run in training mode with stochastic depth and
// dropout drawing from the generator, the stage names, head_init_scale, and drop_path_rate.
#include "components/models/model.h"
#include "runner/io/weights.h"
#include "runner/train/activation_checkpointing.h"
#include "runner/train/autocast.h"

#include "make_model.h"
#include "test_util.h"

#include <torch/torch.h>

#include <cstdio>
#include <map>

namespace trainrun {
namespace {

struct ConvNeXtStep {
  at::Tensor logits;
  std::map<std::string, at::Tensor> grads;
  at::Tensor next_random;
};

// One training-mode step from a fixed seed: logits, every gradient, the generator's next numbers.
ConvNeXtStep convnext_step(Classifier& model, const at::Tensor& x, const at::Tensor& dy, const std::string& precision) {
  model.train();
  model.zero_grad();
  torch::manual_seed(11);
  ConvNeXtStep s;
  {
    Autocast autocast(precision, torch::kCPU);
    s.logits = model.forward(x);
  }
  (s.logits.to(torch::kFloat) * dy).sum().backward();
  for (auto& p : model.named_parameters()) s.grads[p.key()] = p.value().grad().clone();
  s.next_random = torch::rand({8});
  return s;
}

class ConvNeXtCheckpointing : public ::testing::TestWithParam<std::string> {};

// Every stage checkpointed against none, with drop path and dropout: the same logits and
// gradients bit for bit and the same random stream afterwards (the recompute replays the masks),
// in fp32 and under bf16 autocast.
TEST_P(ConvNeXtCheckpointing, GradientsAndRandomStreamEqualThePlainRun) {
  const std::string precision = GetParam();
  torch::manual_seed(4);
  auto model = test::make_model("convnext_tiny", "{num_classes: 10, drop_rate: 0.3, drop_path_rate: 0.2}");
  EXPECT_EQ(model->checkpoint_stages(), (std::vector<std::string>{"stages.0", "stages.1", "stages.2", "stages.3"}));
  at::Tensor x = torch::randn({2, 3, 64, 64}), dy = torch::randn({2, 10});
  ConvNeXtStep plain = convnext_step(*model, x, dy, precision);
  set_activation_checkpointing(*model, model->checkpoint_stages());
  ConvNeXtStep checkpointed = convnext_step(*model, x, dy, precision);
  set_activation_checkpointing(*model, {});

  EXPECT_TRUE(torch::equal(plain.logits, checkpointed.logits));
  double worst = 0;
  bool identical = true;
  for (auto& [key, g] : plain.grads) {
    worst = std::max(worst, (g - checkpointed.grads.at(key)).abs().max().item<double>());
    identical = identical && torch::equal(g, checkpointed.grads.at(key));
  }
  std::printf("[ measured ] convnext_tiny %s, every stage checkpointed: max |grad - plain grad| = %g\n",
              precision.c_str(), worst);
  EXPECT_TRUE(identical);
  EXPECT_TRUE(torch::equal(plain.next_random, checkpointed.next_random));
}

INSTANTIATE_TEST_SUITE_P(Modes, ConvNeXtCheckpointing, ::testing::Values("fp32", "bf16"),
                         [](const auto& info) { return info.param; });

// head_init_scale multiplies head.fc's initial weight and bias, and nothing else.
TEST(ConvNeXt, HeadInitScaleScalesOnlyTheClassifier) {
  torch::manual_seed(3);
  TensorList plain = state_dict(*test::make_model("convnext_tiny", "{num_classes: 10}"));
  torch::manual_seed(3);
  TensorList scaled = state_dict(*test::make_model("convnext_tiny", "{num_classes: 10, head_init_scale: 0.001}"));
  ASSERT_EQ(plain.size(), scaled.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const auto& [key, t] = plain[i];
    if (key == "head.fc.weight")
      EXPECT_TRUE(torch::equal(scaled[i].second, t * 0.001)) << key;
    else
      EXPECT_TRUE(torch::equal(scaled[i].second, t)) << key;
  }
  EXPECT_GT(plain.back().second.numel(), 0);
}

// Stochastic depth only trains: in eval mode drop_path_rate changes nothing; in training mode it
// drops some samples' branches (the same model's logits differ from the rate-0 model's).
TEST(ConvNeXt, DropPathActsInTrainingOnly) {
  torch::manual_seed(5);
  auto plain = test::make_model("convnext_tiny", "{num_classes: 10}");
  torch::manual_seed(5);
  auto dropping = test::make_model("convnext_tiny", "{num_classes: 10, drop_path_rate: 0.5}");
  {
    torch::NoGradGuard no_grad;  // gamma at 1 so the blocks' branches weigh in the logits
    for (auto* m : {plain.get(), dropping.get()})
      for (auto& p : m->named_parameters())
        if (p.key().size() > 6 && p.key().compare(p.key().size() - 6, 6, ".gamma") == 0) p.value().fill_(1.0);
  }
  at::Tensor x = torch::randn({4, 3, 64, 64});
  torch::NoGradGuard no_grad;
  plain->eval();
  dropping->eval();
  EXPECT_TRUE(torch::equal(plain->forward(x), dropping->forward(x)));
  plain->train();
  dropping->train();
  torch::manual_seed(6);
  at::Tensor a = plain->forward(x);
  torch::manual_seed(6);
  at::Tensor b = dropping->forward(x);
  EXPECT_FALSE(torch::allclose(a, b));
}

}  // namespace
}  // namespace trainrun
