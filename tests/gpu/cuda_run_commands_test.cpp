// `eval`, `predict` and `export` of a run trained on CUDA (resnet18, fp16 with loss scaling):
// eval reproduces the run's own eval_accuracy, predict classifies image files on the GPU, and the
// TorchScript and ONNX exports give predict's logits: `predict --model` (TorchScript, on the CPU)
// and, in python3, torch.jit.load on CPU and CUDA and onnxruntime (tests/py/export_ort_check.py).
#include "gpu_util.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
  return out;
}

// The largest |logit difference| between two predict outputs for the same files.
double max_logit_diff(const std::vector<json>& a, const std::vector<json>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i]["file"], b[i]["file"]);
    for (std::size_t k = 0; k < a[i]["logits"].size(); ++k)
      worst = std::max(worst, std::abs(a[i]["logits"][k].get<double>() - b[i]["logits"][k].get<double>()));
  }
  return worst;
}

TEST(CudaTrainedRun, EvalPredictAndExportWork) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: a CUDA-trained run needs one";
  test::TempDir dir;
  test::write_rgb_folder(dir / "data");
  test::write_file(dir / "r.yaml", R"(
seed: 1
model: {name: resnet18, num_classes: auto}
data:
  dataset: {name: image_folder, root: )" + (dir / "data/train") + ", val_root: " + (dir / "data/val") + R"(}
  train_transforms: [{random_resized_crop: {size: 48}}, to_tensor, {normalize: {mean: model, std: model}}]
  eval_transforms: [{resize: {size: 56}}, {center_crop: {size: 48}}, to_tensor, {normalize: {mean: model, std: model}}]
  batch_size: 4
  workers: 2
optimizer: {name: sgd, lr: 0.01}
precision: fp16
train: {epochs: 2, eval_every: epoch, log_every_steps: 1}
world: {nproc_per_node: 1, device: cuda, master_port: 0}
)");
  const std::string recipe = dir / "r.yaml";
  auto r = test::run(test::trainrun(recipe + " output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Device = cuda:0, precision = fp16"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(dir / "run/model.safetensors"));
  double accuracy = -1;
  for (const auto& line : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (line.contains("eval_accuracy")) accuracy = line["eval_accuracy"].get<double>();
  ASSERT_GE(accuracy, 0.0);

  // eval on the GPU, with the recipe's fp16 autocast: the run's own last evaluation.
  test::eval_printing_accuracy(recipe + " --checkpoint " + (dir / "run"), accuracy);

  std::string images;
  for (const std::string cls : {"cat", "dog", "owl"})
    for (int k = 0; k < 2; ++k) images += " " + (dir / ("data/val/" + cls + "/" + std::to_string(k) + ".png"));
  auto predicted = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "run") + images));
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const auto want = json_lines(predicted.out);
  ASSERT_EQ(want.size(), 6u) << predicted.out;
  double scale = 1;
  for (const auto& line : want)
    for (const auto& v : line["logits"]) {
      ASSERT_TRUE(std::isfinite(v.get<double>())) << line;
      scale = std::max(scale, std::abs(v.get<double>()));
    }
  // predict --checkpoint ran fp32 on the GPU, where cuDNN's convolutions may use TF32 (LibTorch's
  // default; unit roundoff 2^-11); the exports below run fp32 on a CPU. 18 layers of that rounding
  // stay within 1% of the logits' scale; a wrong weight or layout is off by far more.
  const double tolerance = 1e-2 * scale;

  for (const char* format : {"torchscript", "onnx"}) {
    auto e = test::run(test::trainrun("export " + recipe + " --checkpoint " + (dir / "run") + " --format " + format));
    ASSERT_EQ(e.code, 0) << format << "\n" << e.out << e.err;
  }
  ASSERT_TRUE(fs::is_regular_file(dir / "run/model.pt"));
  ASSERT_TRUE(fs::is_regular_file(dir / "run/model.onnx"));
  auto alone = test::run(test::trainrun("predict --model " + (dir / "run/model.pt") + images));
  ASSERT_EQ(alone.code, 0) << alone.err;
  const double diff = max_logit_diff(json_lines(alone.out), want);
  std::cout << "[ measured ] predict --model (TorchScript, CPU) vs predict --checkpoint (CUDA): max |logit diff| " << diff
            << " (logits up to " << scale << ")\n";
  EXPECT_LE(diff, tolerance);

  if (auto why = test::python_cuda_missing(); !why.empty()) GTEST_SKIP() << "no Python check of the exports: " << why;
  auto py = test::run(test::gpu_python() + " " + test::source("tests/py/export_ort_check.py") + " " + (dir / "run/model.pt") +
                      " " + (dir / "run/model.onnx") + " 3 48 48");
  ASSERT_EQ(py.code, 0) << py.err;
  const json got = json::parse(py.out);
  std::cout << "[ measured ] " << py.out;
  ASSERT_FALSE(got["cuda_vs_cpu"].is_null()) << py.out;
  EXPECT_LE(got["cuda_vs_cpu"].get<double>(), tolerance) << py.out;  // the TorchScript file on the GPU
  if (got["onnxruntime"].is_null()) GTEST_SKIP() << "onnxruntime is not installed for " << test::gpu_python() << ": " << got["why"];
  EXPECT_LE(got["ort_vs_torchscript"].get<double>(), 1e-4) << py.out;  // both fp32 on a CPU
}

}  // namespace
}  // namespace trainrun
