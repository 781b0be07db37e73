// fp16 on CUDA with GradScaler's rules, through the trainer's own step (autocast, LossScaler,
// prepare_optimizer_step, take_optimizer_step): a step whose fp16 gradients overflow is skipped
// (weights untouched) and the scale halves; growth_interval clean steps later it doubles. The same
// numbers go through torch.amp.GradScaler("cuda") in python3 (tests/py/grad_scaler_ref.py), which
// must agree on every scale, every skip and the final weights.
#include "gpu_util.h"
#include "runner/train/autocast.h"
#include "runner/train/optimization.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

using nlohmann::json;

struct ConstantLr : Scheduler {
  using Scheduler::Scheduler;
  double lr(int64_t, double base_lr) const override { return base_lr; }
};

constexpr int kInfStep = 1;

// A Linear(4 -> 3), SGD lr 0.5, six steps of 8 examples; every number exact in binary. On step
// kInfStep the inputs are 4096x larger: the forward still fits fp16 (|logit| <= 6400), but the
// scaled weight gradient (terms up to 2048 x 1280) overflows fp16, as a loss spike does. Elsewhere
// gradients stay far below fp16's 65504 at scale 16384 (|x| <= 0.3125).
json make_spec() {
  json spec = {{"lr", 0.5}, {"init_scale", 16384.0}, {"growth_factor", 2.0}, {"backoff_factor", 0.5},
               {"growth_interval", 3}, {"bias", {0.25, -0.5, 0.125}}};
  for (int i = 0; i < 3; ++i) {
    json row = json::array();
    for (int j = 0; j < 4; ++j) row.push_back(double(i * 4 + j - 5) / 8);
    spec["weight"].push_back(row);
  }
  for (int t = 0; t < 6; ++t) {
    json x = json::array(), y = json::array();
    for (int n = 0; n < 8; ++n) {
      json row = json::array();
      for (int j = 0; j < 4; ++j) row.push_back(double((n * 7 + j * 3 + t) % 11 - 5) / 16 * (t == kInfStep ? 4096 : 1));
      x.push_back(row);
      y.push_back((n + t) % 3);
    }
    spec["steps"].push_back({{"x", x}, {"y", y}});
  }
  return spec;
}

at::Tensor matrix(const json& rows, at::ScalarType type = at::kFloat) {
  std::vector<double> flat;
  for (const auto& r : rows)
    for (const auto& v : r) flat.push_back(v.get<double>());
  return at::tensor(flat, at::kDouble).reshape({int64_t(rows.size()), -1}).to(type);
}

at::Tensor vector_of(const json& values, at::ScalarType type) {
  std::vector<double> flat;
  for (const auto& v : values) flat.push_back(v.get<double>());
  return at::tensor(flat, at::kDouble).to(type);
}

TEST(Fp16OnCuda, OverflowSkipsTheStepBacksOffAndGrowsAsTorchGradScaler) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: fp16 autocast and GradScaler's unscale kernel need one";
  const c10::Device cuda(c10::kCUDA, 0);
  const json spec = make_spec();
  torch::nn::Linear lin(4, 3);
  {
    torch::NoGradGuard no_grad;
    lin->weight.copy_(matrix(spec["weight"]));
    lin->bias.copy_(vector_of(spec["bias"], at::kFloat));
  }
  lin->to(cuda);
  std::vector<at::Tensor> params = lin->parameters();
  Optimization opt;
  opt.optimizer = std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(spec["lr"].get<double>()));
  opt.scheduler = std::make_shared<ConstantLr>(*opt.optimizer);
  LossScaler scaler(true, {16384.0, 2.0, 0.5, 3});

  std::vector<double> scales;
  std::vector<bool> skipped;
  for (const auto& s : spec["steps"]) {
    opt.optimizer->zero_grad();
    at::Tensor x = matrix(s["x"]).to(cuda), y = vector_of(s["y"], at::kLong).to(cuda), out;
    {
      Autocast autocast("fp16", cuda);
      out = lin->forward(x);
    }
    ASSERT_EQ(out.scalar_type(), at::kHalf);  // the Linear ran in fp16
    scaler.scale(torch::nn::functional::cross_entropy(out.to(at::kFloat), y)).backward();
    prepare_optimizer_step(scaler, params, /*max_grad_norm=*/0.0, /*want_norm=*/false);
    std::vector<at::Tensor> before;
    for (auto& p : params) before.push_back(p.detach().clone());
    take_optimizer_step(opt, scaler);
    bool same = true;
    for (std::size_t i = 0; i < params.size(); ++i) same = same && torch::equal(before[i], params[i].detach());
    scales.push_back(scaler.current_scale());
    skipped.push_back(same);
    for (auto& p : params) ASSERT_EQ(p.scalar_type(), at::kFloat);  // master weights stay fp32
  }
  // GradScaler's rules, on our own: the overflow step alone skipped, backoff 0.5, growth x2 after 3.
  EXPECT_EQ(skipped, (std::vector<bool>{false, true, false, false, false, false}));
  EXPECT_EQ(scales, (std::vector<double>{16384, 8192, 8192, 8192, 16384, 16384}));
  for (auto& p : params) EXPECT_TRUE(p.detach().isfinite().all().item<bool>());

  // The same numbers through PyTorch's GradScaler.
  if (auto why = test::python_cuda_missing(); !why.empty()) GTEST_SKIP() << "no reference: " << why;
  test::TempDir dir;
  test::write_file(dir / "spec.json", spec.dump());
  auto r = test::run(test::gpu_python() + " " + test::source("tests/py/grad_scaler_ref.py") + " " + (dir / "spec.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const json ref = json::parse(r.out);
  if (ref.contains("skip")) GTEST_SKIP() << "no reference: " << ref["skip"];
  EXPECT_EQ(ref["skipped"].get<std::vector<bool>>(), skipped) << r.out;
  EXPECT_EQ(ref["scales"].get<std::vector<double>>(), scales) << r.out;
  // Same kernels for the fp16 forward/backward (the same torch); the fp32 SGD update may or may
  // not fuse its multiply-add (foreach in Python, per tensor here): a few float32 ulps of ~1.
  const double dw = (matrix(ref["weight"]) - params[0].detach().cpu()).abs().max().item<double>();
  const double db = (vector_of(ref["bias"], at::kFloat) - params[1].detach().cpu()).abs().max().item<double>();
  std::cout << "[ measured ] torch " << ref["torch"].get<std::string>() << " GradScaler: max |weight diff| " << dw
            << ", |bias diff| " << db << "\n";
  EXPECT_LE(dw, 1e-5);
  EXPECT_LE(db, 1e-5);
}

}  // namespace
}  // namespace trainrun
