// train.activation_checkpointing (runner/train/activation_checkpointing.h) against the two runs it
// must equal: the plain run (the same gradients, bit for bit, the same BatchNorm statistics and
// random stream after the step) and torch.utils.checkpoint as timm's set_grad_checkpointing uses
// it (tests/py/resnet_ref.py --checkpoint), whose gradients it copies and whose second
// running-statistics update it leaves out.
#include "components/data/image.h"
#include "components/models/model.h"
#include "runner/io/weights.h"
#include "runner/train/activation_checkpointing.h"
#include "runner/train/autocast.h"
#include "support/safetensors.h"

#include "test_util.h"

#include <torch/torch.h>

#include <cstdio>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Classifier> make_resnet(const std::string& name, const std::string& params) {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg = YAML::Load(params);
  for (auto& p : entry.schema.params())
    if (!cfg[p.name]) cfg[p.name] = p.name == "num_classes" ? YAML::Node(10) : YAML::Clone(p.default_value);
  return entry.make(Config(cfg, "model"));
}

// BatchNorm affine and running statistics away from 1/0 (as resnet_test.cpp's randomize), so
// the zero-initialised last BN of each block passes gradients and a stale statistic shows.
void randomize_bn(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& m : model.modules(false)) {
    auto* bn = m->as<torch::nn::BatchNorm2d>();
    if (!bn) continue;
    bn->weight.copy_(torch::rand_like(bn->weight) + 0.5);
    bn->bias.copy_(torch::randn_like(bn->bias) * 0.1);
    bn->running_mean.copy_(torch::randn_like(bn->running_mean) * 0.1);
    bn->running_var.copy_(torch::rand_like(bn->running_var) * 1.5 + 0.5);
  }
}

std::map<std::string, at::Tensor> as_map(const TensorList& list) { return {list.begin(), list.end()}; }

// The state_dict as copies (state_dict() hands out the live tensors).
TensorList snapshot(const torch::nn::Module& model) {
  TensorList out = state_dict(model);
  for (auto& [_, t] : out) t = t.detach().clone();
  return out;
}

// What one training-mode step leaves: logits, every parameter's gradient, the state_dict (running
// statistics) and the next numbers the CPU generator gives.
struct Step {
  at::Tensor logits;
  std::map<std::string, at::Tensor> grads, state;
  at::Tensor next_random;
};

Step train_step(Classifier& model, const at::Tensor& x, const at::Tensor& dy, const std::string& precision) {
  model.train();
  model.zero_grad();
  torch::manual_seed(11);
  Step s;
  {
    Autocast autocast(precision, torch::kCPU);
    s.logits = model.forward(x);
  }
  (s.logits.to(torch::kFloat) * dy).sum().backward();
  for (auto& p : model.named_parameters()) s.grads[p.key()] = p.value().grad().clone();
  s.state = as_map(snapshot(model));
  s.next_random = torch::rand({8});
  return s;
}

// max |a - b| over the gradients, and whether every one is bit-identical.
std::pair<double, bool> compare_grads(const Step& a, const Step& b) {
  double worst = 0;
  bool identical = true;
  for (auto& [key, g] : a.grads) {
    worst = std::max(worst, (g - b.grads.at(key)).abs().max().item<double>());
    identical = identical && torch::equal(g, b.grads.at(key));
  }
  return {worst, identical};
}

// A block that counts its forwards: run once in forward, once more in backward.
TEST(ActivationCheckpointing, RecomputesTheBlockInBackwardAndTouchesNothingTwice) {
  torch::manual_seed(0);
  auto block = std::make_shared<torch::nn::SequentialImpl>(torch::nn::Linear(6, 5), torch::nn::BatchNorm1d(5),
                                                           torch::nn::Dropout(0.5));
  auto stem = torch::nn::Linear(4, 6);
  at::Tensor x = torch::randn({8, 4}), dy = torch::randn({8, 5});
  TensorList initial = snapshot(*block);

  auto run = [&](bool checkpointed, int& forwards) {
    load_state_dict(*block, initial, "initial");
    block->zero_grad();
    stem->zero_grad();
    forwards = 0;
    BlockForward forward = [&](const at::Tensor& in) {
      ++forwards;
      return block->forward(in);
    };
    torch::manual_seed(3);
    at::Tensor h = stem(x);
    at::Tensor y = checkpointed ? checkpoint_block(block, forward, h) : forward(h);
    EXPECT_EQ(forwards, 1);
    (y * dy).sum().backward();
    std::map<std::string, at::Tensor> out = as_map(snapshot(*block));
    for (auto& p : block->named_parameters()) out["grad." + p.key()] = p.value().grad().clone();
    out["grad.stem"] = stem->weight.grad().clone();
    out["next_random"] = torch::rand({4});
    return out;
  };
  int plain_forwards = 0, checkpointed_forwards = 0;
  auto plain = run(false, plain_forwards);
  auto checkpointed = run(true, checkpointed_forwards);
  EXPECT_EQ(plain_forwards, 1);
  EXPECT_EQ(checkpointed_forwards, 2);  // recomputed in backward
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (auto& [key, value] : plain)  // dropout's mask replayed; BN's statistics and counter updated once
    EXPECT_TRUE(torch::equal(value, checkpointed.at(key))) << key;
  EXPECT_EQ(checkpointed.at("1.num_batches_tracked").item<int64_t>(), 1);

  // Under no grad (evaluation) the block simply runs, once.
  torch::NoGradGuard no_grad;
  int forwards = 0;
  BlockForward counted = [&](const at::Tensor& in) {
    ++forwards;
    return block->forward(in);
  };
  at::Tensor y = checkpoint_block(block, counted, stem(x));
  EXPECT_EQ(forwards, 1);
  EXPECT_FALSE(y.requires_grad());
}

// A checkpointed block whose input needs no gradient (everything before it frozen) still gives
// its parameters theirs: they are inputs of the recompute node (torch's non-reentrant checkpoint
// does the same; the reentrant one leaves them None with a warning).
TEST(ActivationCheckpointing, BlockAfterAFrozenStemStillTrains) {
  torch::manual_seed(0);
  auto block = std::make_shared<torch::nn::LinearImpl>(4, 3);
  at::Tensor x = torch::randn({5, 4}), dy = torch::randn({5, 3});
  (checkpoint_block(block, [&](const at::Tensor& in) { return block->forward(in); }, x) * dy).sum().backward();
  at::Tensor checkpointed = block->weight.grad().clone();
  block->zero_grad();
  (block->forward(x) * dy).sum().backward();
  EXPECT_TRUE(torch::equal(checkpointed, block->weight.grad()));
}

// resnet50d with timm's stochastic depth and dropout in training mode, every stage checkpointed
// against none: the same gradients bit for bit, the same running statistics, the same random
// stream afterwards; in fp32 (NCHW and NHWC) and under bf16 autocast, which the recompute must
// re-enter (the backward runs outside the forward's autocast scope, as in the trainer).
class ResNetCheckpointing : public ::testing::TestWithParam<std::string> {};

TEST_P(ResNetCheckpointing, GradientsStatisticsAndRandomStreamEqualThePlainRun) {
  const std::string mode = GetParam();
  const std::string precision = mode == "bf16" ? "bf16" : "fp32";
  torch::manual_seed(4);
  auto model = make_resnet("resnet50d", "{drop_rate: 0.3, drop_path_rate: 0.2}");
  randomize_bn(*model);
  at::Tensor x = torch::randn({4, 3, 64, 64}), dy = torch::randn({4, 10});
  if (mode == "channels_last") {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())  // as memory_format: channels_last (runner/recipe/resolve.cpp)
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  }
  TensorList initial = snapshot(*model);

  Step plain = train_step(*model, x, dy, precision);
  load_state_dict(*model, initial, "initial");
  set_activation_checkpointing(*model, model->checkpoint_stages());
  Step checkpointed = train_step(*model, x, dy, precision);
  set_activation_checkpointing(*model, {});

  EXPECT_TRUE(torch::equal(plain.logits, checkpointed.logits));
  auto [worst, identical] = compare_grads(plain, checkpointed);
  std::printf("[ measured ] resnet50d %s, every stage checkpointed: max |grad - plain grad| = %g (%s)\n", mode.c_str(),
              worst, identical ? "bit-identical" : "not bit-identical");
  EXPECT_TRUE(identical);
  for (auto& [key, value] : plain.state)
    EXPECT_TRUE(torch::equal(value, checkpointed.state.at(key))) << key;  // running stats updated once
  EXPECT_TRUE(torch::equal(plain.next_random, checkpointed.next_random));
}

INSTANTIATE_TEST_SUITE_P(Modes, ResNetCheckpointing, ::testing::Values("fp32", "channels_last", "bf16"),
                         [](const auto& info) { return info.param; });

// A list checkpoints those stages (the others keep their activations), with the same gradients.
TEST(ActivationCheckpointing, StageListCheckpointsThoseStages) {
  torch::manual_seed(4);
  auto model = make_resnet("resnet18", "{drop_path_rate: 0.1}");
  EXPECT_EQ(model->checkpoint_stages(), (std::vector<std::string>{"layer1", "layer2", "layer3", "layer4"}));
  at::Tensor x = torch::randn({2, 3, 64, 64}), dy = torch::randn({2, 10});
  TensorList initial = snapshot(*model);
  Step plain = train_step(*model, x, dy, "fp32");
  load_state_dict(*model, initial, "initial");
  set_activation_checkpointing(*model, {"layer2", "layer4"});
  Step some = train_step(*model, x, dy, "fp32");
  auto [worst, identical] = compare_grads(plain, some);
  std::printf("[ measured ] resnet18, layer2 and layer4 checkpointed: max |grad - plain grad| = %g\n", worst);
  EXPECT_TRUE(identical);
}

// The behaviour copied: timm's resnet50d with set_grad_checkpointing(True), i.e.
// torch.utils.checkpoint(block, x, use_reentrant=False) per residual block, in PyTorch itself.
TEST(ActivationCheckpointing, GradientsAreTorchUtilsCheckpointsRunningStatsThePlainRuns) {
  test::TempDir dir;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // as resnet_ref.py runs (resnet_test.cpp says why)
  torch::manual_seed(4);
  auto model = make_resnet("resnet50d", "{drop_rate: 0.3, drop_path_rate: 0.2}");
  randomize_bn(*model);
  save_safetensors(dir / "model.safetensors", state_dict(*model));
  at::Tensor x = torch::randn({4, 3, 64, 64}), dy = torch::randn({4, 10});
  save_safetensors(dir / "input.safetensors", {{"x", x}, {"dy", dy}});
  const std::string ref = std::string(test::kPython) + " " + test::source("tests/py/resnet_ref.py") +
                          " forward resnet50d " + (dir / "model.safetensors") + " " + (dir / "input.safetensors") + " ";
  const std::string flags = " --train 11 --drop-rate 0.3 --drop-path-rate 0.2";
  auto r = test::run(ref + (dir / "torch_checkpoint.safetensors") + flags + " --checkpoint");
  ASSERT_EQ(r.code, 0) << r.err;
  r = test::run(ref + (dir / "torch_plain.safetensors") + flags);
  ASSERT_EQ(r.code, 0) << r.err;
  auto torch_checkpoint = as_map(load_safetensors(dir / "torch_checkpoint.safetensors"));
  auto torch_plain = as_map(load_safetensors(dir / "torch_plain.safetensors"));

  set_activation_checkpointing(*model, model->checkpoint_stages());
  Step ours = train_step(*model, x, dy, "fp32");
  at::set_num_threads(threads);
  double worst = 0, worst_abs = 0;
  std::string worst_key;
  for (auto& [key, g] : ours.grads) {
    const at::Tensor& want = torch_checkpoint.at("grad." + key);
    double diff = (g - want).abs().max().item<double>();
    worst_abs = std::max(worst_abs, diff);
    if (diff / want.abs().max().item<double>() > worst) worst = diff / want.abs().max().item<double>(), worst_key = key;
  }
  std::printf("[ measured ] resnet50d, ours vs torch.utils.checkpoint: gradients max|diff| %g, worst relative %g (%s)\n",
              worst_abs, worst, worst_key.c_str());
  EXPECT_LE(worst, 1e-4) << worst_key;  // resnet_test.cpp's bound for a training step against PyTorch
  // torch.utils.checkpoint runs BatchNorm forward twice in training mode: num_batches_tracked
  // goes up by 2 and the running statistics take the batch's twice. Ours are the plain run's.
  const std::string bn = "layer1.0.bn1.";
  EXPECT_EQ(torch_checkpoint.at("state." + bn + "num_batches_tracked").item<int64_t>(),
            torch_plain.at("state." + bn + "num_batches_tracked").item<int64_t>() + 1);
  for (auto& [key, value] : ours.state) {
    const at::Tensor& want = torch_plain.at("state." + key);
    if (value.is_floating_point())
      EXPECT_TRUE(torch::allclose(value, want, 1e-5, 1e-6)) << key;
    else
      EXPECT_TRUE(torch::equal(value, want)) << key;
  }
  EXPECT_FALSE(torch::allclose(torch_checkpoint.at("state." + bn + "running_mean"),
                               torch_plain.at("state." + bn + "running_mean"), 1e-5, 1e-6));
}

// The recipe key end to end: resnet18 with stochastic depth on 8 small JPEGs, one SGD step per
// run; checkpointing every stage (one process) or two of them (two processes, gloo DDP, whose
// reducer hooks each parameter's gradient accumulator) leaves the same weights as the plain run.
class CheckpointingRecipe : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir / "pets");
    torch::manual_seed(0);
    for (int i = 1; i <= 8; ++i) {
      write_image(dir / ("pets/beagle_" + std::to_string(i) + ".jpg"), torch::randint(0, 256, {40, 48, 3}, torch::kUInt8));
      write_image(dir / ("pets/Bengal_" + std::to_string(i) + ".jpg"), torch::randint(0, 120, {48, 40, 3}, torch::kUInt8));
    }
    test::write_file(dir / "r.yaml", R"(
model: {name: resnet18, num_classes: auto, drop_path_rate: 0.1}
data:
  dataset: {name: pets_folder, root: )" + (dir / "pets") + R"(, val_fraction: 0.25}
  train_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  eval_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  batch_size: 4
  workers: 0
  max_train_samples: 8
optimizer: {name: sgd, lr: 0.01}
train: {epochs: 1, loss: cross_entropy, log_every_steps: 1, eval_every: never}
output: {save_every: never}
world: {nproc_per_node: 1, threads_per_proc: 1, master_port: 0}
)");
  }
  test::RunResult train(const std::string& args, const std::string& out) {
    return test::run(test::trainrun((dir / "r.yaml") + " " + args + " output.dir=" + (dir / out)));
  }
  void expect_same_weights(const std::string& a, const std::string& b) {
    TensorList x = load_safetensors(dir / (a + "/model.safetensors")), y = load_safetensors(dir / (b + "/model.safetensors"));
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(torch::equal(x[i].second, y[i].second)) << a << " vs " << b << ": " << x[i].first;
  }
  test::TempDir dir;
};

TEST_F(CheckpointingRecipe, OneAndTwoProcessRunsEqualThePlainOnes) {
  auto plain = train("", "plain");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("Activation checkpointing"), std::string::npos);
  auto every = train("train.activation_checkpointing=true", "every");
  ASSERT_EQ(every.code, 0) << every.err;
  EXPECT_NE(every.out.find("Activation checkpointing = layer1, layer2, layer3, layer4"), std::string::npos) << every.out;
  expect_same_weights("plain", "every");

  auto plain2 = train("world.nproc_per_node=2 data.batch_size=2", "plain2");
  ASSERT_EQ(plain2.code, 0) << plain2.err;
  auto some2 = train("world.nproc_per_node=2 data.batch_size=2 'train.activation_checkpointing=[layer2, layer4]'", "some2");
  ASSERT_EQ(some2.code, 0) << some2.err;
  EXPECT_NE(some2.out.find("Activation checkpointing = layer2, layer4"), std::string::npos) << some2.out;
  expect_same_weights("plain2", "some2");
  // The resolved recipe keeps the key as written, and runs again as is.
  EXPECT_NE(test::read_file(dir / "some2/recipe.resolved.yaml").find("activation_checkpointing: [layer2, layer4]"),
            std::string::npos);
}

}  // namespace
}  // namespace trainrun
