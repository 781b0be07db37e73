// LossScaler follows GradScaler's rules (torch/cuda/amp/grad_scaler.py and _amp_update_scale_).
#include "runner/train/loss_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace trainrun {
namespace {

TEST(LossScaler, ScalesUnscalesSkipsAndBacksOff) {
  LossScaler s(true, {1024.0, 2.0, 0.5, 3});
  at::Tensor w = torch::ones({2}, torch::requires_grad());
  s.scale((w * torch::tensor({1.0, 2.0})).sum()).backward();
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({1024.0f, 2048.0f})));
  EXPECT_FALSE(s.unscale({w}));
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({1.0f, 2.0f})));
  EXPECT_FALSE(s.unscale({w}));  // a second unscale in the same step does nothing
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({1.0f, 2.0f})));
  s.update();
  EXPECT_EQ(s.current_scale(), 1024.0);
  EXPECT_EQ(s.growth_tracker(), 1);

  w.grad().fill_(std::numeric_limits<float>::infinity());
  EXPECT_TRUE(s.unscale({w}));
  EXPECT_TRUE(s.step_skipped());
  s.update();
  EXPECT_EQ(s.current_scale(), 512.0);  // backoff, and the clean-step count restarts
  EXPECT_EQ(s.growth_tracker(), 0);

  for (int i = 0; i < 3; ++i) {
    w.grad().fill_(1.0);
    EXPECT_FALSE(s.unscale({w}));
    s.update();
  }
  EXPECT_EQ(s.current_scale(), 1024.0);  // grown after growth_interval clean steps
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(LossScaler, NanCountsAsOverflowAndDisabledIsIdentity) {
  LossScaler s(true);
  at::Tensor w = torch::ones({3}, torch::requires_grad());
  (w.sum() * std::numeric_limits<float>::quiet_NaN()).backward();
  EXPECT_TRUE(s.unscale({w}));
  LossScaler off(false);
  at::Tensor loss = torch::tensor(3.0);
  EXPECT_TRUE(torch::equal(off.scale(loss), loss));
  EXPECT_FALSE(off.unscale({w}));
}

}  // namespace
}  // namespace trainrun
