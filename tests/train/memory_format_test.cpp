// memory_format: channels_last runs the resnets' convolutions in NHWC (oneDNN on a CPU) with the
// same results within float rounding, saves weights PyTorch reads as usual, and is what `auto`
// picks for a resnet (not for BasicNet); the banner says so.
#include "components/data/image.h"
#include "support/safetensors.h"
#include "runner/recipe/onednn_check.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class MemoryFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir / "pets");
    torch::manual_seed(0);
    for (int i = 1; i <= 8; ++i) {
      write_image(dir / ("pets/beagle_" + std::to_string(i) + ".jpg"), torch::randint(0, 256, {40, 48, 3}, torch::kUInt8));
      write_image(dir / ("pets/Bengal_" + std::to_string(i) + ".jpg"), torch::randint(0, 120, {48, 40, 3}, torch::kUInt8));
    }
  }
  // resnet18 at 64x64, fp32, SGD, 1 process, one optimizer step: a longer run on 4-image batches
  // is chaotic enough (BN over 16 values at layer4) that PyTorch's own contiguous and
  // channels_last runs part by 1e-4 relative in a gradient norm on some seeds, then diverge.
  test::RunResult train(const std::string& format, const std::string& out) {
    test::write_file(dir / "r.yaml", R"(
model: {name: resnet18, num_classes: auto}
data:
  dataset: {name: pets_folder, root: )" + (dir / "pets") + R"(, val_fraction: 0.25}
  train_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  eval_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  batch_size: 4
  workers: 0
  max_train_samples: 4
optimizer: {name: sgd, lr: 0.001}
train: {epochs: 1, loss: cross_entropy, log_every_steps: 1}
world: {nproc_per_node: 1, threads_per_proc: 1}
)");
    return test::run(test::trainrun((dir / "r.yaml") + " precision=fp32 memory_format=" + format + " output.dir=" + (dir / out)));
  }
  test::TempDir dir;
};

// The check in onednn_check.h against oneDNN itself: where it finds a fault, the convolution it
// names computes wrong numbers in NHWC (fp32 1x1 stride 2, 256->512 on 4x4, the downsample of a
// resnet18's layer4 at 64x64); where it finds none, NHWC equals NCHW within float rounding.
TEST(OnednnCheck, FaultFoundExactlyWhereNhwcConvolutionsAreWrong) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "no oneDNN in this LibTorch";
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  auto w = torch::randn({512, 256, 1, 1}), x = torch::randn({4, 256, 4, 4});
  auto nchw = torch::conv2d(x, w, {}, 2);
  auto nhwc = torch::conv2d(x.contiguous(at::MemoryFormat::ChannelsLast), w.contiguous(at::MemoryFormat::ChannelsLast), {}, 2);
  const double rel = ((nchw - nhwc).abs().max() / nchw.abs().max()).item<double>();
  const auto fault = onednn_channels_last_fault();
  std::cout << "[ measured ] NHWC 1x1 stride-2 convolution, max relative error " << rel << "; fault found: "
            << (fault ? *fault : "none") << "\n";
  if (fault)
    EXPECT_GT(rel, 1e-2);
  else
    EXPECT_LT(rel, 1e-5);
}

TEST_F(MemoryFormat, ChannelsLastTrainsTheSameWithinRounding) {
  auto plain = train("contiguous", "plain");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("memory format"), std::string::npos) << plain.out;
  auto nhwc = train("auto", "nhwc");
  ASSERT_EQ(nhwc.code, 0) << nhwc.err;
  if (!at::hasMKLDNN()) GTEST_SKIP() << "no oneDNN in this LibTorch: auto stays contiguous";
  if (const auto fault = onednn_channels_last_fault()) {
    // auto stays contiguous and says why; an explicit channels_last is refused before anything starts.
    EXPECT_NE(nhwc.out.find("memory format = contiguous (auto: " + *fault + ")"), std::string::npos) << nhwc.out;
    auto asked = train("channels_last", "asked");
    EXPECT_EQ(asked.code, 2);
    EXPECT_NE(asked.err.find("memory_format: channels_last: " + *fault), std::string::npos) << asked.err;
    EXPECT_FALSE(fs::exists(dir / "asked"));
    GTEST_SKIP() << "channels_last is not run on this machine: " << *fault;
  }
  EXPECT_NE(nhwc.out.find("memory format = channels_last (auto: oneDNN convolutions)"), std::string::npos) << nhwc.out;
  // The weights on disk are plain row-major tensors, equal to the NCHW run's within rounding.
  TensorList a = load_safetensors(dir / "plain/model.safetensors"), b = load_safetensors(dir / "nhwc/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    ASSERT_TRUE(b[i].second.is_contiguous()) << b[i].first;
    if (a[i].second.is_floating_point())
      worst = std::max(worst, (a[i].second - b[i].second).abs().max().item<double>());
  }
  EXPECT_LT(worst, 1e-4);
  std::cout << "[ measured ] resnet18, one SGD step: max |contiguous - channels_last| over the weights = " << worst << "\n";
}

TEST_F(MemoryFormat, AutoLeavesBasicNetContiguous) {
  auto r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") + " memory_format=auto"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The resolved recipe says what `auto` became, and why.
  EXPECT_NE(r.out.find("\nmemory_format: contiguous\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#   memory_format: contiguous (basicnet does not gain from NHWC)\n"), std::string::npos) << r.out;
  r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") + " memory_format=nhwc"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("memory_format"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainrun
