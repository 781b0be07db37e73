// Asking for CUDA or NCCL where there is none: one clear line on stderr, exit 2 (a bad recipe,
// nothing started, nothing written: docs/reference/bad-inputs.md), from `check` and from a run
// alike. These run on a machine without CUDA (and a LibTorch without NCCL) and skip where CUDA or
// NCCL is present.
#include "gpu_util.h"
#include "runner/distributed/process_group.h"

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// `trainrun check` and `trainrun` (a run) with `overrides`: both exit 2 with exactly `line` on
// stderr, and the run leaves no output folder.
void expect_one_line_exit_2(const std::string& overrides, const std::string& line) {
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 64, 20);
  const std::string recipe = test::source("recipes/quickstart.yaml") + " data.dataset.root=" + (dir / "data") + " ";
  for (const std::string command : {"check ", ""}) {
    auto r = test::run(test::trainrun(command + recipe + overrides + " output.dir=" + (dir / "run")));
    EXPECT_EQ(r.code, 2) << command << overrides << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, line + "\n") << command << overrides;
    EXPECT_FALSE(fs::exists(dir / "run")) << command << overrides;
  }
}

TEST(NoCuda, DeviceCudaIsOneLineExit2) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available here: world.device: cuda is no error";
  expect_one_line_exit_2("world.device=cuda", "world.device: cuda was asked for but no CUDA device is available");
  // fp16 asks for CUDA too; the device error comes first when both are wrong.
  expect_one_line_exit_2("precision=fp16",
                         "precision: fp16 needs a CUDA device (this run is on cpu); use bf16 or fp32 on CPU, or precision: auto");
  expect_one_line_exit_2("world.device=cuda world.backend=nccl",
                         "world.device: cuda was asked for but no CUDA device is available");
}

TEST(NoNccl, BackendNcclIsOneLineExit2) {
  if (torch::cuda::is_available() && has_nccl()) GTEST_SKIP() << "CUDA and NCCL are available here: nccl is no error";
  if (!torch::cuda::is_available()) {
    // A CPU LibTorch (no CUDA, hence no NCCL): the run is on the CPU, which NCCL cannot serve.
    expect_one_line_exit_2("world.backend=nccl", "world.backend: nccl needs CUDA devices (this run is on cpu); use gloo");
    expect_one_line_exit_2("world.backend=nccl world.device=cpu world.nproc_per_node=2",
                           "world.backend: nccl needs CUDA devices (this run is on cpu); use gloo");
  } else {
    // A CUDA LibTorch built without NCCL: refused before anything starts, not when the ranks meet.
    expect_one_line_exit_2("world.backend=nccl world.device=cuda",
                           "world.backend: nccl: this LibTorch was built without NCCL (USE_C10D_NCCL); use gloo");
  }
}

}  // namespace
}  // namespace trainrun
