// Resuming on another device (docs/guides/resume.md, "Another device"), the CPU's half: a
// checkpoint written on CUDA (its rng.pt holds cuda_rank_0 beside cpu_rank_0, as every CUDA run's
// does) resumes on the CPU to the uninterrupted CPU run's result bit for bit, saying that CUDA's
// generator state is not used; and what a resume does with the generator states for each pair of
// devices. The GPU's half (a CPU checkpoint resumed on CUDA and a CUDA one on the CPU, the
// optimizer's state moved between them): tests/gpu/device_change_test.cpp.
#include "runner/train/checkpoints.h"
#include "support/same_run.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

TEST(DeviceChange, GeneratorStatesForEachPairOfDevices) {
  // Written on CUDA, resumed on CUDA: both restored, nothing said.
  RngMapping m = map_rng_states(true, true, true, 7, 30);
  EXPECT_TRUE(m.restore_cpu && m.restore_cuda);
  EXPECT_FALSE(m.cuda_seed);
  EXPECT_EQ(m.note, "");
  // Written on the CPU, resumed on the CPU.
  m = map_rng_states(true, false, false, 7, 30);
  EXPECT_TRUE(m.restore_cpu);
  EXPECT_FALSE(m.restore_cuda || m.cuda_seed);
  EXPECT_EQ(m.note, "");
  // Written on CUDA, resumed on the CPU: CUDA's state is left out, and said so.
  m = map_rng_states(true, true, false, 7, 30);
  EXPECT_TRUE(m.restore_cpu);
  EXPECT_FALSE(m.restore_cuda || m.cuda_seed);
  EXPECT_NE(m.note.find("CUDA's is not used"), std::string::npos) << m.note;
  // Written on the CPU, resumed on CUDA: the CUDA generator seeded from seed and step, so that two
  // resumes of the same checkpoint draw the same dropout masks and a later one others.
  m = map_rng_states(true, false, true, 7, 30);
  EXPECT_TRUE(m.restore_cpu);
  EXPECT_FALSE(m.restore_cuda);
  ASSERT_TRUE(m.cuda_seed);
  EXPECT_EQ(*m.cuda_seed, 37u);
  EXPECT_EQ(*map_rng_states(true, false, true, 7, 31).cuda_seed, 38u);
  EXPECT_NE(m.note.find("seeded with seed + global step = 37"), std::string::npos) << m.note;
  // A rank the checkpoint's world did not have: nothing to restore on any device.
  m = map_rng_states(false, false, true, 7, 30);
  EXPECT_FALSE(m.restore_cpu || m.restore_cuda || m.cuda_seed);
}

// BasicNet (with its dropout, drawn from the CPU generator on the CPU) interrupted at step 7; its
// checkpoint is given the CUDA generator state a CUDA run writes beside the CPU's, then resumed on
// the CPU. A resume that took the CUDA entry for the CPU's state, or failed on it, parts here.
TEST(DeviceChange, ACheckpointWrittenOnCudaResumesOnCpuBitIdentical) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  auto args = [&](const std::string& run) {
    return test::trainrun(test::source("recipes/quickstart.yaml") +
                          " data.max_train_samples=640 data.max_eval_samples=200 data.workers=1 train.epochs=2"
                          " train.log_every_steps=1 world.nproc_per_node=1 world.master_port=0 output.dir=" +
                          (dir / run));
  };
  ASSERT_EQ(test::run(args("full")).code, 0);
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args("split"));
  ASSERT_EQ(first.code, 130) << first.err;
  const std::string rng = dir / "split/checkpoint-7/rng.pt";
  {
    torch::serialize::InputArchive in;
    in.load_from(rng);
    at::Tensor cpu;
    ASSERT_TRUE(in.try_read("cpu_rank_0", cpu, /*is_buffer=*/true));
    EXPECT_FALSE(in.try_read("cuda_rank_0", cpu, /*is_buffer=*/true));
    in.read("cpu_rank_0", cpu, /*is_buffer=*/true);
    torch::serialize::OutputArchive out;
    out.write("cpu_rank_0", cpu, /*is_buffer=*/true);
    // A CUDA generator's state: 16 bytes (its seed and Philox offset), torch.cuda.get_rng_state()'s size.
    out.write("cuda_rank_0", torch::arange(16, torch::kUInt8), /*is_buffer=*/true);
    out.save_to(rng);
  }
  auto second = test::run(args("split"));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find(rng + ": written on CUDA, resumed on the CPU: the CPU generator's state is restored, "
                                  "CUDA's is not used"),
            std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("Continuing training from global step 7"), std::string::npos) << second.out;
  test::expect_same_run(dir, "full", "split");
}

}  // namespace
}  // namespace trainrun
