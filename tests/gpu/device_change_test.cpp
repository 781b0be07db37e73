// Resuming on another device (docs/guides/resume.md, "Another device"): a checkpoint written on the
// CPU resumes on CUDA, and one written on CUDA resumes on the CPU. BasicNet without dropout, AdamW,
// fp32 with TF32 off and cuDNN deterministic (tests/gpu/plugins/gpu_test_callbacks.cpp), so that the
// two devices differ only in the order of their sums. Each resumed run is compared with the
// uninterrupted run on the device that wrote the checkpoint:
// - the first step after the resume (the checkpoint's weights, the same batch, a forward on the
//   other device) to 1e-5: wrong weights or another batch move it by 1e-3 or more;
// - the second (one AdamW step taken with the restored moments and step count) to 1e-4: moments
//   lost in the move would make that step lr * sign(gradient) for every weight;
// - the later steps and the final weights by twice what a whole run on the other device differs,
//   measured in the same test, plus 1e-5.
// The CPU's half with the generator states' mapping: tests/io/device_change_test.cpp.
#include "gpu_util.h"
#include "support/safetensors.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using Losses = std::map<int64_t, double>;

double max_difference(const Losses& a, const Losses& b, int64_t from = 0) {
  double out = 0;
  for (const auto& [step, loss] : a)
    if (step >= from && b.count(step)) out = std::max(out, std::abs(loss - b.at(step)));
  return out;
}

double max_weight_difference(const std::string& a, const std::string& b) {
  TensorList wa = load_safetensors(a), wb = load_safetensors(b);
  double out = 0;
  for (std::size_t i = 0; i < wa.size() && i < wb.size(); ++i)
    out = std::max(out, (wa[i].second - wb[i].second).abs().max().item<double>());
  return out;
}

TEST(DeviceChangeOnCuda, ACpuCheckpointResumesOnCudaAndACudaOneOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 640, 200);
  // 640 examples, batch 64: 10 optimizer steps per epoch, 20 in all.
  auto args = [&](const std::string& run, const std::string& device) {
    return test::trainrun(test::source("recipes/quickstart.yaml") + " data.dataset.root=" + (dir / "data") +
                          " world.device=" + device + " world.nproc_per_node=1 world.master_port=0 output.dir=" +
                          (dir / run) + " precision=fp32 train.epochs=2 train.log_every_steps=1 model.dropout1=0"
                          " model.dropout2=0 'plugins=[" + std::string(GPU_TEST_PLUGIN) +
                          "]' 'callbacks=[{name: deterministic_cudnn}, {name: no_tf32}]'");
  };
  for (const auto& [run, device] : {std::pair{"cpu", "cpu"}, {"cuda", "cuda"}})
    ASSERT_EQ(test::run(args(run, device)).code, 0) << run;
  auto losses = [&](const std::string& run) { return test::by_step(dir / (run + "/metrics.jsonl"), "loss"); };
  const Losses cpu = losses("cpu"), cuda = losses("cuda");
  ASSERT_EQ(cpu.size(), 20u);
  const double devices = max_difference(cpu, cuda);
  const double weights = max_weight_difference(dir / "cpu/model.safetensors", dir / "cuda/model.safetensors");
  std::cout << "whole runs, CPU against CUDA: losses " << devices << ", weights " << weights << std::endl;

  struct Move { const char* run; const char* from; const char* to; const char* note; const Losses& same; };
  for (const Move& m : {Move{"cpu_to_cuda", "cpu", "cuda", "written without CUDA, resumed on CUDA", cpu},
                        Move{"cuda_to_cpu", "cuda", "cpu", "written on CUDA, resumed on the CPU", cuda}}) {
    SCOPED_TRACE(m.run);
    auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args(m.run, m.from));
    ASSERT_EQ(first.code, 130) << first.out << first.err;
    auto second = test::run(args(m.run, m.to));
    ASSERT_EQ(second.code, 0) << second.out << second.err;
    EXPECT_NE(second.out.find("Continuing training from global step 7"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find(m.note), std::string::npos) << second.out;
    const Losses moved = losses(m.run);
    ASSERT_EQ(moved.size(), 20u);
    for (int64_t step = 1; step <= 7; ++step) EXPECT_EQ(moved.at(step), m.same.at(step)) << step;
    const double first_step = std::abs(moved.at(8) - m.same.at(8)), second_step = std::abs(moved.at(9) - m.same.at(9));
    const double later = max_difference(moved, m.same, 10);
    const double w = max_weight_difference(dir / (std::string(m.run) + "/model.safetensors"),
                                           dir / (std::string(m.from) + "/model.safetensors"));
    std::cout << m.run << ": step 8 " << first_step << ", step 9 " << second_step << ", steps 10-20 " << later
              << ", final weights " << w << std::endl;
    EXPECT_LE(first_step, 1e-5);
    EXPECT_LE(second_step, 1e-4);
    EXPECT_LE(later, 2 * devices + 1e-5);
    EXPECT_LE(w, 2 * weights + 1e-5);
  }
}

}  // namespace
}  // namespace trainrun
