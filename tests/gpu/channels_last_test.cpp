// channels_last on CUDA against contiguous: resnet18 (train mode, BatchNorm on the batch) with its
// conv weights and input in NHWC, as resolve_memory_format and the trainer make them, gives the
// logits and gradients of the NCHW model. NHWC and NCHW run different cuDNN kernels, so neither
// equals the other bit for bit; the tolerance is set by the NCHW run itself: each is compared with
// the same model in float64, and NHWC must be within 10x the NCHW run's own error from it. A broken
// NHWC path (a weight read in the wrong layout, a lost stride) is off by O(1), not by a factor of 10.
// The comparison runs with TF32 off (torch.backends.cudnn.allow_tf32 / cuda.matmul.allow_tf32 =
// False for its duration): with PyTorch's default (TF32 in cuDNN convolutions, 10-bit mantissa)
// both layouts' fp32 gradients were ~11 % from float64 and 7.8 % from each other on an H100
// (torch 2.11.0+cu130, 2026-11-27; logits 0.26 % / 0.28 %, 0.14 % apart), which measures TF32,
// not the layout.
#include "components/make_model.h"
#include "gpu_util.h"
#include "support/safetensors.h"

namespace trainrun {
namespace {

struct Result {
  at::Tensor logits, grads;  // float64 on the host; grads flattened and concatenated
};

Result step(const c10::Device& device, at::ScalarType type, bool channels_last) {
  torch::manual_seed(0);
  auto model = test::make_model("resnet18", "{num_classes: 10}");
  model->to(device, type);
  model->train();
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(format));
  }
  torch::manual_seed(1);
  at::Tensor x = torch::randn({16, 3, 64, 64}, at::kDouble).to(device, type).contiguous(format);
  at::Tensor y = torch::arange(16, at::kLong).remainder(10).to(device);
  at::Tensor logits = model->forward(x);
  torch::nn::functional::cross_entropy(logits, y).backward();
  std::vector<at::Tensor> grads;
  for (auto& p : model->parameters()) {
    if (channels_last && p.dim() == 4) {
      EXPECT_TRUE(p.grad().is_contiguous(at::MemoryFormat::ChannelsLast));
    }
    grads.push_back(p.grad().to(at::kDouble).flatten());
  }
  return {logits.detach().to(at::kDouble).cpu(), at::cat(grads).cpu()};
}

double rel(const at::Tensor& a, const at::Tensor& ref) { return ((a - ref).norm() / ref.norm()).item<double>(); }

TEST(ChannelsLastOnCuda, SameLogitsAndGradientsAsContiguous) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: cuDNN's NHWC kernels need one";
  const c10::Device cuda(c10::kCUDA, 0);
  auto& ctx = at::globalContext();
  const bool tf32_cudnn = ctx.allowTF32CuDNN(), tf32_cublas = ctx.allowTF32CuBLAS();
  ctx.setAllowTF32CuDNN(false);
  ctx.setAllowTF32CuBLAS(false);
  Result exact = step(cuda, at::kDouble, false), nchw = step(cuda, at::kFloat, false), nhwc = step(cuda, at::kFloat, true);
  const double logits_nchw = rel(nchw.logits, exact.logits), logits_nhwc = rel(nhwc.logits, exact.logits);
  const double grads_nchw = rel(nchw.grads, exact.grads), grads_nhwc = rel(nhwc.grads, exact.grads);
  std::cout << "[ measured ] resnet18 fp32 on CUDA, relative error from float64: logits NCHW " << logits_nchw << " NHWC "
            << logits_nhwc << "; gradients NCHW " << grads_nchw << " NHWC " << grads_nhwc
            << "; NHWC vs NCHW: logits " << rel(nhwc.logits, nchw.logits) << " gradients " << rel(nhwc.grads, nchw.grads)
            << "\n";
  EXPECT_LE(logits_nhwc, 10 * logits_nchw + 1e-6);
  EXPECT_LE(grads_nhwc, 10 * grads_nchw + 1e-6);
  EXPECT_LE(rel(nhwc.logits, nchw.logits), 1e-2);
  EXPECT_LE(rel(nhwc.grads, nchw.grads), 1e-2);
  ctx.setAllowTF32CuDNN(tf32_cudnn);
  ctx.setAllowTF32CuBLAS(tf32_cublas);
}

// The recipe key end to end: memory_format: channels_last on CUDA trains, says so, and writes the
// plain row-major weights PyTorch reads.
TEST(ChannelsLastOnCuda, RecipeKeyTrainsAndSavesRowMajorWeights) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: memory_format channels_last on world.device cuda needs one";
  test::TempDir dir;
  test::write_rgb_folder(dir / "data");
  test::write_file(dir / "r.yaml", R"(
model: {name: resnet18, num_classes: auto}
data:
  dataset: {name: image_folder, root: )" + (dir / "data/train") + ", val_root: " + (dir / "data/val") + R"(}
  train_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  eval_transforms: [{resize: {size: [64, 64]}}, to_tensor, normalize]
  batch_size: 8
  workers: 1
optimizer: {name: sgd, lr: 0.001}
train: {epochs: 1, log_every_steps: 1}
world: {nproc_per_node: 1, device: cuda, master_port: 0}
)");
  auto r = test::run(test::trainrun((dir / "r.yaml") + " precision=fp32 memory_format=channels_last output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("memory format = channels_last"), std::string::npos) << r.out;
  TensorList weights = load_safetensors(dir / "run/model.safetensors");
  ASSERT_FALSE(weights.empty());
  for (const auto& [name, t] : weights) {
    EXPECT_TRUE(t.is_contiguous()) << name;
    if (t.is_floating_point()) {
      EXPECT_TRUE(t.isfinite().all().item<bool>()) << name;
    }
  }
}

}  // namespace
}  // namespace trainrun
