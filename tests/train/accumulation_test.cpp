// Gradient accumulation and clipping, end to end through the trainrun binary.
#include "runner/recipe/job.h"
#include "support/safetensors.h"

#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

class Accumulation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  double max_diff(const std::string& a, const std::string& b) {
    TensorList x = load_safetensors(a), y = load_safetensors(b);
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, (x[i].second - y[i].second).abs().max().item<double>());
    return worst;
  }
  test::TempDir dir;
  // No dropout (and BasicNet has no BatchNorm), so micro-batches add up exactly.
  std::string common = test::source("recipes/quickstart.yaml") +
                       " model.dropout1=0 model.dropout2=0 'optimizer={name: sgd, lr: 0.05, momentum: 0.9}' "
                       "data.max_train_samples=640 data.workers=0 train.eval_every=never world.master_port=0 ";
};

TEST_F(Accumulation, KMicroBatchesEqualOneBatchKTimesLarger) {
  auto big = test::run(test::trainrun(common + "world.nproc_per_node=1 data.batch_size=64 output.dir=" + (dir / "big")));
  ASSERT_EQ(big.code, 0) << big.err;
  auto acc = test::run(test::trainrun(common + "world.nproc_per_node=1 data.batch_size=16 train.grad_accum_steps=4 "
                                      "output.dir=" + (dir / "acc")));
  ASSERT_EQ(acc.code, 0) << acc.err;
  EXPECT_NE(acc.out.find("Gradient Accumulation steps = 4"), std::string::npos);
  EXPECT_NE(acc.out.find("Total optimization steps = 10"), std::string::npos) << acc.out;
  EXPECT_LE(max_diff(dir / "big/model.safetensors", dir / "acc/model.safetensors"), 1e-5);

  // Two ranks, each accumulating 2 micro-batches of 16, without syncing in between.
  auto ddp = test::run(test::trainrun(common + "world.nproc_per_node=2 data.batch_size=16 train.grad_accum_steps=2 "
                                      "output.dir=" + (dir / "ddp")));
  ASSERT_EQ(ddp.code, 0) << ddp.err;
  EXPECT_NE(ddp.out.find("Total train batch size (w. parallel, distributed & accumulation) = 64"), std::string::npos);
  EXPECT_LE(max_diff(dir / "big/model.safetensors", dir / "ddp/model.safetensors"), 1e-5);
}

TEST_F(Accumulation, MaxGradNormBoundsEveryUpdate) {
  // Plain SGD: each update is lr x the clipped gradient, so 10 steps move the weights by at
  // most 10 x lr x max_grad_norm in L2.
  std::string plain = test::source("recipes/quickstart.yaml") +
                      " 'optimizer={name: sgd, lr: 0.5}' data.max_train_samples=640 data.workers=0 "
                      "train.eval_every=never world.nproc_per_node=1 train.max_grad_norm=0.001 output.dir=" + (dir / "clip");
  auto r = test::run(test::trainrun(plain));
  ASSERT_EQ(r.code, 0) << r.err;
  Job initial = build_job(load_recipe(test::source("recipes/quickstart.yaml")));
  auto init = initial.model->named_parameters();
  double sq = 0;
  for (auto& [name, value] : load_safetensors(dir / "clip/model.safetensors"))
    sq += (value - init[name]).pow(2).sum().item<double>();
  double moved = std::sqrt(sq);
  EXPECT_GT(moved, 0.0);
  EXPECT_LE(moved, 10 * 0.5 * 0.001 * (1 + 1e-4));
  EXPECT_GT(moved, 0.5 * 10 * 0.5 * 0.001);  // gradients are far above 0.001, so clipping is active every step
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

// train_loss is the mean loss over micro-batches (the Trainer's), not their sum per optimizer
// step; grad_norm is logged before clipping, and the logs say how time splits into waiting for
// data and the rest of a step.
TEST_F(Accumulation, TrainLossGradNormAndTimingInTheLogs) {
  auto r = test::run(test::trainrun(common + "world.nproc_per_node=1 data.batch_size=32 train.grad_accum_steps=2 "
                                    "train.log_every_steps=1 train.max_grad_norm=0.5 output.save_every=never "
                                    "output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  double sum = 0, n = 0, train_loss = -1;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl")) {
    if (l.contains("train_loss")) train_loss = l["train_loss"];
    if (!l.contains("loss")) continue;
    sum += l["loss"].get<double>(), ++n;  // each line: the mean of one step's 2 micro-batches
    EXPECT_GT(l["grad_norm"].get<double>(), 0.5);  // the norm before clipping to 0.5
    for (const char* key : {"learning_rate", "samples_per_second", "step_time_s", "data_wait_s", "elapsed_s"})
      EXPECT_TRUE(l.contains(key)) << key;
    EXPECT_LE(l["data_wait_s"].get<double>(), l["step_time_s"].get<double>());
  }
  ASSERT_EQ(n, 10);
  EXPECT_NEAR(train_loss, sum / n, 1e-12);
  EXPECT_NE(r.out.find("'grad_norm': "), std::string::npos);
}

}  // namespace
}  // namespace trainrun
