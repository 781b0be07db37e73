// Sharding with torch.utils.data.DistributedSampler's semantics, checked against PyTorch.
#include "components/data/sampler.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <set>

namespace trainrun {
namespace {

TEST(Sampler, ShuffleIsTorchRandpermSeededWithSeedPlusEpoch) {
  auto py = test::run(std::string(test::kPython) +
                      " -c 'import torch, json; g = torch.Generator(); g.manual_seed(42 + 3); "
                      "print(json.dumps(torch.randperm(103, generator=g).tolist()))'");
  ASSERT_EQ(py.code, 0) << py.err;
  auto expected = nlohmann::json::parse(py.out).get<std::vector<int64_t>>();
  ShardOptions o;
  o.seed = 42;
  o.epoch = 3;
  EXPECT_EQ(shard_indices(103, o), expected);
}

TEST(Sampler, MatchesDistributedSamplerForEveryRank) {
  auto py = test::run(std::string(test::kPython) +
                      " -c 'import json; from torch.utils.data import DistributedSampler as S; "
                      "out = []\nfor r in range(3):\n s = S(range(10), num_replicas=3, rank=r, seed=7); s.set_epoch(2); "
                      "out.append(list(s))\nprint(json.dumps(out))'");
  ASSERT_EQ(py.code, 0) << py.err;
  auto expected = nlohmann::json::parse(py.out).get<std::vector<std::vector<int64_t>>>();
  for (int64_t r = 0; r < 3; ++r) {
    ShardOptions o;
    o.seed = 7, o.epoch = 2, o.rank = r, o.world_size = 3;
    EXPECT_EQ(shard_indices(10, o), expected[std::size_t(r)]) << "rank " << r;
  }
}

TEST(Sampler, EvalShardsCoverEveryIndexExactlyOnce) {
  for (int64_t n : {0, 1, 7, 10, 11}) {
    std::multiset<int64_t> seen;
    for (int64_t r = 0; r < 4; ++r) {
      ShardOptions o;
      o.shuffle = false, o.pad = false, o.rank = r, o.world_size = 4;
      for (int64_t i : shard_indices(n, o)) seen.insert(i);
    }
    ASSERT_EQ(int64_t(seen.size()), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen.count(i), 1u);
  }
}

TEST(Sampler, TrainShardsArePaddedToEqualLength) {
  std::set<int64_t> seen;
  for (int64_t r = 0; r < 4; ++r) {
    ShardOptions o;
    o.seed = 1, o.rank = r, o.world_size = 4;
    auto mine = shard_indices(10, o);
    EXPECT_EQ(mine.size(), 3u);
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen.size(), 10u);  // 12 slots, every index at least once
}

}  // namespace
}  // namespace trainrun
