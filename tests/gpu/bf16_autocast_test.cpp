// bf16 autocast on CUDA: inside the trainer's Autocast scope convolutions and matmuls compute in
// bf16 while the parameters (and their gradients) stay fp32, as torch.autocast("cuda",
// torch.bfloat16) does; a BasicNet step under it gives a finite loss and moves the weights; and a
// whole `precision: bf16` run on CUDA trains and evaluates with finite losses.
#include "components/make_model.h"
#include "gpu_util.h"
#include "runner/train/autocast.h"

namespace trainrun {
namespace {

TEST(Bf16OnCuda, ConvAndMatmulRunInBf16ParametersStayFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: bf16 autocast on CUDA needs one";
  const c10::Device cuda(c10::kCUDA, 0);
  torch::manual_seed(0);
  at::Tensor x = torch::randn({2, 3, 8, 8}, cuda), w = torch::randn({4, 3, 3, 3}, cuda);
  at::Tensor a = torch::randn({5, 6}, cuda), b = torch::randn({6, 7}, cuda);
  {
    Autocast autocast("bf16", cuda);
    EXPECT_EQ(torch::conv2d(x, w).scalar_type(), at::kBFloat16);
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), at::kBFloat16);
    EXPECT_EQ(torch::log_softmax(torch::matmul(a, b), 1).scalar_type(), at::kFloat);  // autocast's fp32 list
  }
  EXPECT_EQ(torch::conv2d(x, w).scalar_type(), at::kFloat);  // off again after the scope

  auto model = test::make_model("basicnet", "{num_classes: 10}");
  model->to(cuda);
  model->train();
  std::vector<at::Tensor> params = model->parameters(), before;
  for (auto& p : params) before.push_back(p.detach().clone());
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.1));
  at::Tensor images = torch::randn({16, 1, 28, 28}, cuda), labels = torch::randint(0, 10, {16}, at::TensorOptions().device(cuda).dtype(at::kLong));
  at::Tensor out;
  {
    Autocast autocast("bf16", cuda);
    out = model->forward(images);
  }
  at::Tensor loss = torch::nll_loss(out.to(at::kFloat), labels);
  loss.backward();
  opt.step();
  EXPECT_TRUE(std::isfinite(loss.item<double>())) << loss.item<double>();
  bool moved = false;
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].scalar_type(), at::kFloat) << i;
    ASSERT_TRUE(params[i].grad().defined()) << i;
    EXPECT_EQ(params[i].grad().scalar_type(), at::kFloat) << i;
    moved = moved || !torch::equal(before[i], params[i].detach());
  }
  EXPECT_TRUE(moved);
}

TEST(Bf16OnCuda, Bf16RunTrainsAndEvaluates) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: precision bf16 on world.device cuda needs one";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 256, 100);
  auto r = test::run(test::trainrun(test::quickstart_on_cuda(dir / "data", dir / "run") +
                                    "precision=bf16 train.log_every_steps=1 data.batch_size=32"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Device = cuda:0, precision = bf16"), std::string::npos) << r.out;
  int losses = 0, evals = 0;
  for (const auto& line : test::read_jsonl(dir / "run/metrics.jsonl")) {
    for (const char* key : {"loss", "eval_loss"}) {
      if (!line.contains(key)) continue;
      EXPECT_TRUE(std::isfinite(line[key].get<double>())) << line;
      ++(key[0] == 'l' ? losses : evals);
    }
  }
  EXPECT_EQ(losses, 8);  // 256 examples, batch 32, a line per step
  EXPECT_GE(evals, 1);
}

}  // namespace
}  // namespace trainrun
