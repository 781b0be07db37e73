// Pinned host memory for CUDA runs, as DataLoader(pin_memory=True): the loader options a CUDA job
// gets pin, those of a CPU job do not (a CPU LibTorch cannot pin at all); a pinning loader hands
// out batches whose inputs and targets are page-locked, with and without worker threads, so the
// trainer's .to(device, non_blocking=true) is an asynchronous copy.
#include "gpu_util.h"
#include "components/data/loader/loader.h"
#include "runner/recipe/job.h"
#include "runner/recipe/recipe.h"
#include "runner/train/trainer.h"

namespace trainrun {
namespace {

Job job_on(const std::string& device, const std::string& data) {
  return build_job(load_recipe(test::source("recipes/quickstart.yaml"),
                               {"data.dataset.root=" + data, "world.device=" + device, "world.nproc_per_node=1"}));
}

TEST(PinnedBatches, OnlyCudaJobsPin) {
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 64, 20);
  for (bool train : {true, false}) EXPECT_FALSE(loader_options(job_on("cpu", dir / "data"), train).pin_memory) << train;
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: a CUDA job's loader options need one";
  for (bool train : {true, false}) EXPECT_TRUE(loader_options(job_on("cuda", dir / "data"), train).pin_memory) << train;
}

TEST(PinnedBatches, PinningLoaderHandsOutPageLockedBatches) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: pinned host memory needs one";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 70, 20);
  Job job = job_on("cuda", dir / "data");
  const c10::Device cuda(c10::kCUDA, 0);
  for (int64_t workers : {0, 2}) {
    LoaderOptions options = loader_options(job, /*train=*/true);
    options.workers = workers;
    // 70 examples, 5 batches: the first stacked, then pinned (no example shape known yet); the
    // rest written by the transforms into inputs allocated pinned.
    options.batch_size = 16;
    DataLoader loader(job.data.train, job.train_transforms, options);
    loader.start_epoch(0);
    int batches = 0;
    while (auto batch = loader.next()) {
      ++batches;
      EXPECT_TRUE(batch->inputs.is_pinned()) << "workers " << workers << ", batch " << batches;
      EXPECT_TRUE(batch->targets.is_pinned()) << "workers " << workers << ", batch " << batches;
      // The copy the trainer makes: asynchronous, and after a sync the same numbers.
      at::Tensor on_gpu = batch->inputs.to(cuda, /*non_blocking=*/true);
      EXPECT_TRUE(torch::equal(on_gpu.cpu(), batch->inputs));
    }
    EXPECT_EQ(batches, 5) << workers;
  }
  // Unpinned when asked not to, on the same machine (what a CPU run gets).
  LoaderOptions plain = loader_options(job, true);
  plain.pin_memory = false;
  DataLoader loader(job.data.train, job.train_transforms, plain);
  loader.start_epoch(0);
  EXPECT_FALSE(loader.next()->inputs.is_pinned());
}

}  // namespace
}  // namespace trainrun
