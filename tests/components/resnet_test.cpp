// resnet18 / resnet50d against PyTorch itself: torchvision's resnet18 and timm's resnet50d (rebuilt
// in tests/py/timm_resnet.py, as timm is not packaged for Debian), through safetensors files both
// ways: key names, order and shapes, seeded init, eval logits, a training step (gradients, BN
// statistics, dropout and stochastic depth), F32/F16/BF16 weights, and `model.pretrained`.
#include "components/data/image.h"
#include "components/models/model.h"
#include "runner/recipe/freeze.h"
#include "support/safetensors.h"
#include "runner/io/weights.h"

#include "make_model.h"
#include "test_util.h"

#include <torch/torch.h>

#include <cstdio>

namespace trainrun {
namespace {

using test::make_model;

std::string reference(const std::string& args) {
  return std::string(test::kPython) + " " + test::source("tests/py/resnet_ref.py") + " " + args;
}

// As resnet_ref.py's randomize(): BatchNorm affine and running statistics away from 1/0, so a
// mix-up of weight/bias/mean/var (or a zero-initialised branch) changes the logits.
void randomize(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& m : model.modules(false)) {
    auto* bn = m->as<torch::nn::BatchNorm2d>();
    if (!bn) continue;
    bn->weight.copy_(torch::rand_like(bn->weight) + 0.5);
    bn->bias.copy_(torch::randn_like(bn->bias) * 0.1);
    bn->running_mean.copy_(torch::randn_like(bn->running_mean) * 0.1);
    bn->running_var.copy_(torch::rand_like(bn->running_var) * 1.5 + 0.5);
    bn->num_batches_tracked.fill_(torch::randint(0, 1000, {1}).item<int64_t>());
  }
}

std::map<std::string, at::Tensor> as_map(const TensorList& list) { return {list.begin(), list.end()}; }

// max |a - b| relative to max |b|, printed so the figures show up in the test log.
double relative_error(const at::Tensor& ours, const at::Tensor& ref, const std::string& what) {
  double diff = (ours - ref).abs().max().item<double>(), scale = ref.abs().max().item<double>();
  std::printf("[parity] %s: max|diff| %.3g, max|ref| %.3g, ratio %.3g\n", what.c_str(), diff, scale, diff / scale);
  return diff / scale;
}

at::Tensor eval_logits(Classifier& model, const at::Tensor& x) {
  torch::NoGradGuard no_grad;
  model.eval();
  return model.forward(x);
}

class ResNetParity : public ::testing::TestWithParam<std::string> {
 protected:
  // One intra-op thread, as resnet_ref.py runs: the same kernels then sum in the same order and
  // the logits are bit-identical. LibTorch 1.13 starts with 1 thread here, 2.6 with one per core;
  // with 2 threads resnet50d's logits move by ~1e-5 relative, enough to flip a ReLU at a value
  // that close to 0 in layer4 and change that channel's gradients by 20 % (measured on 2.6).
  void SetUp() override {
    threads_ = at::get_num_threads();
    at::set_num_threads(1);
  }
  void TearDown() override { at::set_num_threads(threads_); }
  int threads_ = 1;
  std::string name = GetParam();
  test::TempDir dir;
  std::string file(const std::string& f) { return dir / f; }
};

TEST_P(ResNetParity, KeysShapesAndSeededInitAreTheReference) {
  auto r = test::run(reference("init " + name + " 7 1000 " + file("ref.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto ref = as_map(load_safetensors(file("ref.safetensors")));
  std::vector<std::string> order;  // PyTorch's state_dict order, as the script printed it
  std::istringstream keys(r.out);
  for (std::string key; std::getline(keys, key);) order.push_back(key);
  torch::manual_seed(7);
  TensorList ours = state_dict(*make_model(name));
  ASSERT_EQ(ours.size(), order.size());
  ASSERT_EQ(ref.size(), order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ(ours[i].first, order[i]) << "key " << i;  // same names in PyTorch's state_dict order
    const at::Tensor& want = ref[order[i]];
    EXPECT_EQ(ours[i].second.sizes(), want.sizes()) << order[i];
    EXPECT_EQ(ours[i].second.scalar_type(), want.scalar_type()) << order[i];
    EXPECT_TRUE(torch::equal(ours[i].second, want)) << order[i] << " differs from the seeded reference init";
  }
}

TEST_P(ResNetParity, PythonWeightsGiveTheSameLogitsHere) {
  torch::manual_seed(1);
  save_safetensors(file("input.safetensors"), {{"x", torch::randn({2, 3, 72, 72})}});
  auto r = test::run(reference("random " + name + " 3 1000 " + file("input.safetensors") + " " + file("w.safetensors") +
                               " " + file("out.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto model = make_model(name);
  load_state_dict(*model, load_safetensors(file("w.safetensors")), file("w.safetensors"));
  at::Tensor x = as_map(load_safetensors(file("input.safetensors")))["x"];
  at::Tensor ref = as_map(load_safetensors(file("out.safetensors")))["logits"];
  EXPECT_LE(relative_error(eval_logits(*model, x), ref, name + " python weights -> trainrun, eval logits"), 1e-5);
}

TEST_P(ResNetParity, OurCheckpointLoadsStrictlyInPythonWithTheSameLogits) {
  torch::manual_seed(2);
  auto model = make_model(name);
  randomize(*model);
  save_safetensors(file("model.safetensors"), state_dict(*model));
  at::Tensor x = torch::randn({2, 3, 72, 72});
  save_safetensors(file("input.safetensors"), {{"x", x}});
  auto r = test::run(reference("forward " + name + " " + file("model.safetensors") + " " + file("input.safetensors") + " " +
                               file("out.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;  // load_state_dict(strict=True) inside
  at::Tensor ref = as_map(load_safetensors(file("out.safetensors")))["logits"];
  EXPECT_LE(relative_error(eval_logits(*model, x), ref, name + " trainrun weights -> python, eval logits"), 1e-5);
}

// One training-mode step: batch statistics, BN running-stat updates, backward; for resnet50d with
// timm's dropout and stochastic depth drawing the same masks from the same seed.
TEST_P(ResNetParity, TrainingStepMatches) {
  std::string drops = name == "resnet50d" ? "{drop_rate: 0.3, drop_path_rate: 0.2}" : "{}";
  std::string flags = name == "resnet50d" ? " --drop-rate 0.3 --drop-path-rate 0.2" : "";
  torch::manual_seed(4);
  auto params = YAML::Load(drops);
  params["num_classes"] = 10;
  auto model = make_model(name, YAML::Dump(params));
  randomize(*model);
  save_safetensors(file("model.safetensors"), state_dict(*model));
  at::Tensor x = torch::randn({4, 3, 80, 80}), dy = torch::randn({4, 10});
  save_safetensors(file("input.safetensors"), {{"x", x}, {"dy", dy}});
  auto r = test::run(reference("forward " + name + " " + file("model.safetensors") + " " + file("input.safetensors") + " " +
                               file("out.safetensors") + " --train 11" + flags));
  ASSERT_EQ(r.code, 0) << r.err;
  auto ref = as_map(load_safetensors(file("out.safetensors")));

  model->train();
  torch::manual_seed(11);
  at::Tensor logits = model->forward(x);
  (logits * dy).sum().backward();
  EXPECT_LE(relative_error(logits.detach(), ref["logits"], name + " train-mode logits"), 1e-5);
  double worst = 0;
  std::string worst_key;
  for (auto& p : model->named_parameters()) {
    at::Tensor g = ref["grad." + p.key()];
    double e = (p.value().grad() - g).abs().max().item<double>() / g.abs().max().item<double>();
    if (e > worst) worst = e, worst_key = p.key();
  }
  std::printf("[parity] %s gradients: worst max|diff|/max|grad| %.3g (%s)\n", name.c_str(), worst, worst_key.c_str());
  EXPECT_LE(worst, 1e-4) << worst_key;
  for (auto& [key, value] : state_dict(*model)) {
    at::Tensor expected = ref["state." + key];
    if (value.is_floating_point())
      EXPECT_TRUE(torch::allclose(value.detach(), expected, 1e-5, 1e-6)) << key;
    else
      EXPECT_TRUE(torch::equal(value, expected)) << key;  // num_batches_tracked went up by one
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ResNetParity, ::testing::Values("resnet18", "resnet50d"),
                         [](const auto& info) { return info.param; });

TEST(ResNet, ParameterCountsAreTorchvisionsAndTimms) {
  auto count = [](const Classifier& m) {
    int64_t n = 0;
    for (auto& p : m.parameters()) n += p.numel();
    return n;
  };
  EXPECT_EQ(count(*make_model("resnet18")), 11689512);   // torchvision.models.resnet18()
  EXPECT_EQ(count(*make_model("resnet50d")), 25576264);  // timm.create_model('resnet50d')
}

TEST(ResNet, KeyNamesUsersRelyOn) {
  auto keys = as_map(state_dict(*make_model("resnet50d", "{num_classes: 37}")));
  for (const char* k : {"conv1.0.weight", "conv1.1.running_var", "conv1.3.weight", "conv1.4.num_batches_tracked",
                        "conv1.6.weight", "bn1.weight", "layer1.0.downsample.1.weight", "layer1.0.downsample.2.running_mean",
                        "layer2.0.downsample.1.weight", "layer4.2.bn3.weight", "fc.weight"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_EQ(keys["fc.weight"].sizes(), (std::vector<int64_t>{37, 2048}));
  EXPECT_EQ(keys["layer2.0.downsample.1.weight"].sizes(), (std::vector<int64_t>{512, 256, 1, 1}));
  EXPECT_FALSE(keys.count("layer2.0.downsample.0.weight"));  // the avg-pool has no weights

  keys = as_map(state_dict(*make_model("resnet18")));
  for (const char* k : {"conv1.weight", "bn1.running_mean", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
                        "layer2.0.downsample.1.num_batches_tracked", "fc.bias"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_EQ(keys["conv1.weight"].sizes(), (std::vector<int64_t>{64, 3, 7, 7}));
}

TEST(ResNet, ZeroInitLastIsTimmsDefaultAndAnOption) {
  auto zeros = [](const std::string& name, const std::string& params, const std::string& suffix) {
    int n = 0, zero = 0;
    for (auto& [k, v] : state_dict(*make_model(name, params)))
      if (k.size() > suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          k.rfind("layer", 0) == 0)
        ++n, zero += torch::equal(v, torch::zeros_like(v));
    return std::make_pair(n, zero);
  };
  EXPECT_EQ(zeros("resnet50d", "{}", "bn3.weight"), std::make_pair(16, 16));
  EXPECT_EQ(zeros("resnet50d", "{zero_init_last: false}", "bn3.weight"), std::make_pair(16, 0));
  EXPECT_EQ(zeros("resnet18", "{}", "bn2.weight"), std::make_pair(8, 0));
  EXPECT_EQ(zeros("resnet18", "{zero_init_last: true}", "bn2.weight"), std::make_pair(8, 8));
}

TEST(ResNet, InputConfigAndClassifier) {
  auto m = make_model("resnet50d");
  EXPECT_EQ(m->input_config().mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(m->input_config().std, (std::vector<double>{0.229, 0.224, 0.225}));
  EXPECT_EQ(m->input_config().input_size, (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(m->classifier_pattern(), "fc.*");
  EXPECT_FALSE(m->outputs_log_probs());
  torch::NoGradGuard no_grad;
  m->eval();
  EXPECT_EQ(m->forward(torch::zeros({1, 3, 224, 224})).sizes(), (std::vector<int64_t>{1, 1000}));
}

// Weights saved in half precision load into the fp32 model as exactly the rounded values;
// integer buffers (num_batches_tracked) stay I64 in the file.
class RoundTrip : public ::testing::TestWithParam<std::tuple<std::string, at::ScalarType>> {};

TEST_P(RoundTrip, StateDictThroughSafetensors) {
  auto [name, dtype] = GetParam();
  test::TempDir dir;
  torch::manual_seed(5);
  auto a = make_model(name, "{num_classes: 10}");
  randomize(*a);
  TensorList written;
  for (auto& [k, v] : state_dict(*a)) written.emplace_back(k, v.is_floating_point() ? v.detach().to(dtype) : v);
  save_safetensors(dir / "w.safetensors", written);

  TensorList read = load_safetensors(dir / "w.safetensors");
  ASSERT_EQ(read.size(), written.size());
  torch::manual_seed(6);
  auto b = make_model(name, "{num_classes: 10}");
  load_state_dict(*b, read, dir / "w.safetensors");
  auto file = as_map(read), loaded = as_map(state_dict(*b));
  int buffers = 0;
  for (auto& [k, v] : written) {
    EXPECT_EQ(file[k].scalar_type(), v.scalar_type()) << k;
    EXPECT_EQ(loaded[k].scalar_type(), as_map(state_dict(*a))[k].scalar_type()) << k;  // the model stays fp32
    EXPECT_TRUE(torch::equal(loaded[k], v.to(loaded[k].scalar_type()))) << k;
    buffers += k.find("running_") != std::string::npos || k.find("num_batches_tracked") != std::string::npos;
  }
  EXPECT_EQ(buffers > 0, name != "basicnet");
}

INSTANTIATE_TEST_SUITE_P(Models, RoundTrip,
                         ::testing::Combine(::testing::Values("basicnet", "resnet18", "resnet50d"),
                                            ::testing::Values(at::kFloat, at::kHalf, at::kBFloat16)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + c10::toString(std::get<1>(info.param));
                         });

// torchvision's published resnet18 weights predate num_batches_tracked; PyTorch loads such files
// strictly and counts from 0, and so does trainrun.
TEST(ResNet, FileWithoutNumBatchesTrackedLoadsLikePyTorch) {
  test::TempDir dir;
  torch::manual_seed(8);
  auto a = make_model("resnet18");
  randomize(*a);
  TensorList old_style;
  for (auto& [k, v] : state_dict(*a))
    if (k.find("num_batches_tracked") == std::string::npos) old_style.emplace_back(k, v);
  save_safetensors(dir / "w.safetensors", old_style);
  auto b = make_model("resnet18");
  randomize(*b);
  load_state_dict(*b, load_safetensors(dir / "w.safetensors"), "w");
  EXPECT_EQ(as_map(state_dict(*b))["layer3.1.bn2.num_batches_tracked"].item<int64_t>(), 0);
  save_safetensors(dir / "input.safetensors", {{"x", torch::randn({1, 3, 32, 32})}});
  auto r = test::run(reference("forward resnet18 " + (dir / "w.safetensors") + " " + (dir / "input.safetensors") + " " +
                               (dir / "out.safetensors")));
  EXPECT_EQ(r.code, 0) << r.err;
}

// `model.pretrained` through the binary: a 1000-class file into a 10-class resnet18 re-initialises
// fc and says so; a missing or mismatched file is one line naming the key and the file.
class Pretrained : public ::testing::Test {
 protected:
  void SetUp() override {
    // Ten classes of small RGB photos (a pets_folder: label = file name up to _N.jpg), since a
    // run passes an example through the model before it starts.
    torch::manual_seed(0);
    std::filesystem::create_directories(dir / "pets");
    for (int c = 0; c < 10; ++c)
      for (int i = 1; i <= 2; ++i)
        write_image(dir / ("pets/breed" + std::to_string(c) + "_" + std::to_string(i) + ".jpg"),
                    torch::randint(0, 256, {37, 50, 3}, torch::kUInt8));
    test::write_file(dir / "r.yaml", "model: {name: resnet18}\ndata: {dataset: {name: pets_folder, root: " +
                                         (dir / "pets") + ", val_fraction: 0.5}}\n");
  }
  test::TempDir dir;
};

TEST_F(Pretrained, ClassifierOfAnotherShapeIsReinitialisedAndLogged) {
  torch::manual_seed(9);
  auto imagenet = make_model("resnet18");
  save_safetensors(dir / "in1k.safetensors", state_dict(*imagenet));
  auto r = test::run(test::trainrun("check " + (dir / "r.yaml") + " model.pretrained=" + (dir / "in1k.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: classifier fc.weight [1000, 512] -> [10, 512] re-initialised for 10 classes"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("note: classifier fc.bias [1000] -> [10] re-initialised for 10 classes"), std::string::npos);
  EXPECT_NE(r.out.find("model: resnet18, 11,181,642 parameters"), std::string::npos) << r.out;

  // The same through the library: every other tensor is the file's, fc keeps its fresh init.
  auto ten = make_model("resnet18", "{num_classes: 10}");
  at::Tensor fresh = ten->named_parameters()["fc.weight"].clone();
  auto report = load_state_dict(*ten, state_dict(*imagenet), "in1k", ten->classifier_pattern());
  EXPECT_EQ(report.reinitialised, (std::vector<std::string>{"fc.weight [1000, 512] -> [10, 512]", "fc.bias [1000] -> [10]"}));
  EXPECT_TRUE(torch::equal(ten->named_parameters()["fc.weight"], fresh));
  auto want = as_map(state_dict(*imagenet));
  for (auto& [k, v] : state_dict(*ten))
    if (k.rfind("fc.", 0) != 0) {
      EXPECT_TRUE(torch::equal(v, want[k])) << k;
    }
}

// recipes/pets_resnet50d.yaml's model half (pretrained + freeze everything but fc) on a small
// pets folder, with a constant schedule and fp32 so that `check` runs on any machine.
TEST_F(Pretrained, PetsRecipeFreezesAllButTheNewClassifier) {
  torch::manual_seed(10);
  save_safetensors(dir / "in1k.safetensors", state_dict(*make_model("resnet50d")));
  std::string stand_ins = " 'data.dataset={name: pets_folder, root: " + (dir / "pets") +
                          ", val_fraction: 0.5}' 'data.train_transforms=[to_tensor]' "
                          "'data.eval_transforms=[to_tensor]' 'scheduler={name: constant}' precision=fp32 ";
  auto r = test::run(test::trainrun("check " + test::source("recipes/pets_resnet50d.yaml") + stand_ins +
                                    "model.pretrained=" + (dir / "in1k.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model: resnet50d, 23,547,754 parameters, 20,490 trainable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: classifier fc.weight [1000, 2048] -> [10, 2048] re-initialised for 10 classes"),
            std::string::npos);

  // As shipped (pretrained: true), `check` fetches nothing and says what a run would download.
  r = test::run("env -u HF_ENDPOINT -u HF_HUB_CACHE HF_HOME=" + (dir / "hf") + " " +
                test::trainrun("check " + test::source("recipes/pets_resnet50d.yaml") + stand_ins));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: model.pretrained: hf-hub:timm/resnet50d.ra2_in1k@main would be downloaded from "
                       "https://huggingface.co/timm/resnet50d.ra2_in1k/resolve/main/model.safetensors"),
            std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "hf"));
}

TEST_F(Pretrained, MissingOrMismatchedFileIsOneLineNamingIt) {
  auto r = test::run(test::trainrun("check " + (dir / "r.yaml") + " model.pretrained=" + (dir / "none.safetensors")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "model.pretrained: " + (dir / "none.safetensors") + ": no such file\n");

  save_safetensors(dir / "r18.safetensors", state_dict(*make_model("resnet18")));
  r = test::run(test::trainrun("check " + (dir / "r.yaml") + " model.name=resnet50d model.pretrained=" +
                               (dir / "r18.safetensors")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("model.pretrained: " + (dir / "r18.safetensors") +
                            ": weights do not match the model: missing keys: conv1.0.weight, conv1.1.weight",
                        0),
            0u)
      << r.err;
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

TEST(FreezeRules, BnEvalKeepsFrozenBatchNormStatistics) {
  auto model = make_model("resnet18", "{num_classes: 10}");
  apply_freeze_rules(*model, {{"*", false, 0}, {"layer4.*", true, 0}});
  model->train();
  EXPECT_EQ(freeze_batchnorm_statistics(*model), 15);  // bn1, layers 1-3 (4+5+5); layer4's BNs train
  auto buffers = model->named_buffers();
  at::Tensor frozen_before = buffers["layer1.0.bn1.running_mean"].clone();
  at::Tensor trained_before = buffers["layer4.0.bn1.running_mean"].clone();
  torch::NoGradGuard no_grad;
  model->forward(torch::randn({2, 3, 64, 64}));
  EXPECT_TRUE(torch::equal(buffers["layer1.0.bn1.running_mean"], frozen_before));
  EXPECT_FALSE(torch::equal(buffers["layer4.0.bn1.running_mean"], trained_before));
}

}  // namespace
}  // namespace trainrun
