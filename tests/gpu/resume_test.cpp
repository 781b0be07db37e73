// Bit-exact resume on CUDA: BasicNet with its dropout (drawn from the CUDA generator, whose state
// rng.pt carries as cuda_rank_0) interrupted mid-epoch, then resumed from that checkpoint, ends
// with the uninterrupted run's losses and weights bit for bit. A resume that restarted the CUDA
// generator from the seed would draw other dropout masks and part at the first step after it.
// cuDNN may pick convolution-gradient algorithms that accumulate with atomics (not repeatable even
// between two whole runs), so both runs turn on cudnn.deterministic through a test plugin
// (tests/gpu/plugins/gpu_test_callbacks.cpp); the rest of BasicNet's kernels on CUDA (max-pool,
// dropout, linear, log-softmax, nll, AdamW) are deterministic on one stream.
#include "gpu_util.h"

#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

TEST(ResumeOnCuda, InterruptedMidEpochThenResumedIsBitIdentical) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the CUDA generator's state in rng.pt needs one";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 640, 200);
  // 640 examples, batch 64: 10 optimizer steps per epoch, 20 in all; a checkpoint each epoch.
  auto args = [&](const std::string& run) {
    return test::trainrun(test::quickstart_on_cuda(dir / "data", dir / run) +
                          "precision=fp32 train.epochs=2 train.log_every_steps=1 'plugins=[" +
                          std::string(GPU_TEST_PLUGIN) + "]' 'callbacks=[{name: deterministic_cudnn}]'");
  };
  auto full = test::run(args("full"));
  ASSERT_EQ(full.code, 0) << full.out << full.err;
  EXPECT_NE(full.out.find("deterministic_cudnn: on"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("Device = cuda:0"), std::string::npos) << full.out;

  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args("split"));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  ASSERT_TRUE(fs::exists(dir / "split/checkpoint-7/rng.pt")) << first.out;
  EXPECT_NE(test::read_file(dir / "split/checkpoint-7/rng.pt").find("cuda_rank_0"), std::string::npos)
      << "rng.pt holds no CUDA generator state";
  auto second = test::run(args("split"));
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("Continuing training from global step 7"), std::string::npos) << second.out;

  for (const char* key : {"loss", "eval_loss"}) {
    auto a = test::by_step(dir / "full/metrics.jsonl", key), b = test::by_step(dir / "split/metrics.jsonl", key);
    EXPECT_FALSE(a.empty()) << key;
    EXPECT_EQ(a, b) << key;
  }
  const std::string weights = test::read_file(dir / "full/model.safetensors");
  ASSERT_FALSE(weights.empty());
  EXPECT_TRUE(weights == test::read_file(dir / "split/model.safetensors")) << "final weights differ";
}

}  // namespace
}  // namespace trainrun
