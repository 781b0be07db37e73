// A one-process NCCL world on CUDA: the process group is made over the rendezvous store, all_reduce
// gives the right sums on the GPU, DistributedModel (DDP's Reducer over NCCL) trains a step with the
// gradients of the unwrapped model; and a recipe with world.backend: nccl runs. Skips where this
// LibTorch has no NCCL (has_nccl(): USE_C10D_NCCL, as process_group.cpp decides).
#include "components/make_model.h"
#include "gpu_util.h"
#include "runner/distributed/accelerator.h"
#include "runner/distributed/process_group.h"
#include "runner/distributed/rendezvous.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace trainrun {
namespace {

std::shared_ptr<Classifier> basicnet_on(const c10::Device& device) {
  torch::manual_seed(3);
  // No dropout: the two copies compared below must compute the same function.
  auto model = test::make_model("basicnet", "{num_classes: 10, dropout1: 0, dropout2: 0}");
  model->to(device);
  model->train();
  return model;
}

TEST(NcclOnCuda, OneProcessWorldAllReducesAndTrainsADdpStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: NCCL needs one";
  if (!has_nccl()) GTEST_SKIP() << "this LibTorch was built without NCCL (no USE_C10D_NCCL)";
  const c10::Device cuda(c10::kCUDA, 0);
  at::globalContext().setDeterministicCuDNN(true);  // the two copies' gradients comparable closely
  WorldInfo world;
  world.master_port = test::free_port();
  JoinedWorld joined = join_world(world, "nccl", std::chrono::seconds(120));
  ASSERT_TRUE(joined.group);
  EXPECT_EQ(joined.group->getSize(), 1);
  EXPECT_EQ(joined.group->getRank(), 0);

  at::Tensor x = torch::arange(6, at::TensorOptions().dtype(at::kFloat).device(cuda)) - 2.5;
  std::vector<at::Tensor> v{x.clone()};
  joined.group->allreduce(v)->wait();  // SUM over one rank
  EXPECT_TRUE(v[0].is_cuda());
  EXPECT_TRUE(torch::equal(v[0], x)) << v[0];
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  std::vector<at::Tensor> m{x.clone()};
  joined.group->allreduce(m, max)->wait();
  EXPECT_TRUE(torch::equal(m[0], x)) << m[0];

  auto plain = basicnet_on(cuda), wrapped = basicnet_on(cuda);
  DistributedModel ddp(wrapped, joined.group, AcceleratorOptions{});
  torch::optim::SGD opt_plain(plain->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD opt_ddp(wrapped->parameters(), torch::optim::SGDOptions(0.1));
  torch::manual_seed(4);
  at::Tensor images = torch::randn({16, 1, 28, 28}).to(cuda), labels = torch::randint(0, 10, {16}).to(cuda);
  torch::nll_loss(plain->forward(images), labels).backward();
  torch::nll_loss(ddp.forward(images), labels).backward();
  auto a = plain->parameters(), b = wrapped->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(b[i].grad().defined()) << i;
    // Averaged over one rank: the model's own gradient.
    EXPECT_TRUE(torch::allclose(a[i].grad(), b[i].grad(), 1e-5, 1e-7)) << i;
  }
  opt_plain.step();
  opt_ddp.step();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-7)) << i;
}

TEST(NcclOnCuda, RecipeWithBackendNcclTrains) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: NCCL needs one";
  if (!has_nccl()) GTEST_SKIP() << "this LibTorch was built without NCCL (no USE_C10D_NCCL)";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 128, 40);
  auto r = test::run(test::trainrun(test::quickstart_on_cuda(dir / "data", dir / "run") + "world.backend=nccl"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "run/model.safetensors")) << r.out;
}

}  // namespace
}  // namespace trainrun
