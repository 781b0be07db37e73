// Two processes sharing one GPU over gloo (world.nproc_per_node 2, world.backend gloo,
// world.device cuda on a machine with one GPU): both ranks run on cuda:0, DDP keeps their weights
// equal, and the run trains to the end. Each rank writes its own weights through the test
// plugin's rank_weights callback (only rank 0 writes checkpoints).
#include "gpu_util.h"
#include "support/safetensors.h"

#include <map>

namespace trainrun {
namespace {

TEST(SharedGpuOverGloo, TwoRanksOnOneGpuTrainToEqualWeights) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: two ranks sharing one need one";
  test::TempDir dir;
  test::write_random_mnist(dir / "data", 256, 60);
  auto r = test::run(test::trainrun(test::quickstart_on_cuda(dir / "data", dir / "run") +
                                    "world.nproc_per_node=2 world.backend=gloo data.batch_size=32 'plugins=[" +
                                    std::string(GPU_TEST_PLUGIN) + "]' 'callbacks=[{name: rank_weights}]'"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (int rank : {0, 1}) EXPECT_EQ(test::read_file(dir / ("run/rank" + std::to_string(rank) + ".device")), "cuda:0") << rank;
  TensorList w0 = load_safetensors(dir / "run/rank0.safetensors"), w1 = load_safetensors(dir / "run/rank1.safetensors");
  ASSERT_FALSE(w0.empty());
  ASSERT_EQ(w0.size(), w1.size());
  for (std::size_t i = 0; i < w0.size(); ++i) {
    EXPECT_EQ(w0[i].first, w1[i].first);
    EXPECT_TRUE(torch::equal(w0[i].second, w1[i].second)) << w0[i].first;  // DDP: the same averaged step
  }
  // Rank 0's are the run's final weights (model.safetensors, same names).
  TensorList saved = load_safetensors(dir / "run/model.safetensors");
  std::map<std::string, at::Tensor> by_name(saved.begin(), saved.end());
  for (const auto& [name, t] : w0) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_TRUE(torch::equal(by_name[name], t)) << name;
  }
}

}  // namespace
}  // namespace trainrun
