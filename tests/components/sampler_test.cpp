// Sharding with torch.utils.data.DistributedSampler's semantics, and data.sampler: weighted with
// WeightedRandomSampler's, checked against PyTorch.
#include "components/data/loader/sampler.h"

#include "components/data/loader/loader.h"
#include "make_dataset.h"
#include "registry/registry.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
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

// Labels without images to speak of: example i is one pixel holding i (so a batch shows which
// examples it holds), labelled as given.
class SamplerLabelledPixels : public Dataset {
 public:
  explicit SamplerLabelledPixels(std::vector<int64_t> labels) : labels_(std::move(labels)) {}
  std::size_t size() const override { return labels_.size(); }
  Example get(std::size_t i) const override { return {torch::full({1, 1, 1}, int64_t(i), torch::kUInt8), label(i), {}}; }
  int64_t label(std::size_t i) const override { return labels_.at(i); }

 private:
  std::vector<int64_t> labels_;
};

// counts[c] examples of class c, dealt round-robin (0, 1, 2, 0, 1, 2, ...) while a class has any left.
std::vector<int64_t> sampler_imbalanced_labels(std::vector<int64_t> counts) {
  std::vector<int64_t> labels;
  for (bool any = true; any;) {
    any = false;
    for (std::size_t c = 0; c < counts.size(); ++c)
      if (counts[c] > 0) --counts[c], labels.push_back(int64_t(c)), any = true;
  }
  return labels;
}

// python3-torch's WeightedRandomSampler over `labels` (1 / class count each) for `epochs`.
std::vector<std::vector<int64_t>> torch_weighted_draws(const std::vector<int64_t>& labels, uint64_t seed,
                                                       const std::vector<int64_t>& epochs) {
  test::TempDir dir;
  test::write_file(dir / "labels.json", nlohmann::json(labels).dump());
  std::string args;
  for (int64_t e : epochs) args += " " + std::to_string(e);
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/weighted_sampler.py") + " " +
                      (dir / "labels.json") + " " + std::to_string(seed) + args);
  EXPECT_EQ(py.code, 0) << py.err;
  if (py.code != 0) return {};
  return nlohmann::json::parse(py.out).get<std::vector<std::vector<int64_t>>>();
}

// The same generator as the shuffle (seed + epoch) and torch.multinomial's own kernel: the indices
// are WeightedRandomSampler's, one for one, and a world's ranks take every world_size-th of them
// after DistributedSampler's padding.
TEST(Sampler, WeightedDrawsAreWeightedRandomSamplersForEveryRank) {
  const std::vector<int64_t> labels = sampler_imbalanced_labels({45, 12, 4});
  const int64_t n = int64_t(labels.size());
  SamplerLabelledPixels data(labels);
  auto expected = torch_weighted_draws(labels, 42, {0, 1, 2});
  ASSERT_EQ(expected.size(), 3u);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const auto& draws = expected[std::size_t(epoch)];
    ShardOptions o;
    o.seed = 42, o.epoch = epoch;
    o.weights = inverse_class_frequency_weights(data, 3);
    EXPECT_EQ(shard_indices(n, o), draws) << "epoch " << epoch;
    std::vector<int64_t> padded = draws;
    padded.insert(padded.end(), draws.begin(), draws.begin() + 2);  // 61 -> 63 for 3 ranks
    for (int64_t r = 0; r < 3; ++r) {
      o.rank = r, o.world_size = 3;
      std::vector<int64_t> want;
      for (std::size_t i = std::size_t(r); i < padded.size(); i += 3) want.push_back(padded[i]);
      EXPECT_EQ(shard_indices(n, o), want) << "epoch " << epoch << " rank " << r;
    }
  }
}

TEST(Sampler, WeightedDrawsRepeatAreFixedBySeedPlusEpochAndShardWithoutOverlap) {
  const std::vector<int64_t> labels = sampler_imbalanced_labels({45, 12, 4});
  const int64_t n = int64_t(labels.size());
  ShardOptions o;
  o.seed = 7, o.epoch = 2;
  o.weights = inverse_class_frequency_weights(SamplerLabelledPixels(labels), 3);
  const auto draws = shard_indices(n, o);
  ASSERT_EQ(int64_t(draws.size()), n);
  EXPECT_EQ(shard_indices(n, o), draws);  // the same (seed, epoch), the same draws
  EXPECT_LT(std::set<int64_t>(draws.begin(), draws.end()).size(), draws.size());  // with replacement
  o.epoch = 3;
  EXPECT_NE(shard_indices(n, o), draws);
  o.seed = 6;  // 6 + 3 = 7 + 2: the generator's seed is all that counts
  EXPECT_EQ(shard_indices(n, o), draws);
  // 4 ranks: 16 draws each; dealt back in rank order they are the one list padded to 64, so no
  // draw goes to two ranks and none is lost.
  std::vector<std::vector<int64_t>> shards;
  for (int64_t r = 0; r < 4; ++r) {
    o.rank = r, o.world_size = 4;
    shards.push_back(shard_indices(n, o));
    EXPECT_EQ(shards.back().size(), 16u);
  }
  std::vector<int64_t> dealt;
  for (std::size_t i = 0; i < 16; ++i)
    for (auto& s : shards) dealt.push_back(s[i]);
  std::vector<int64_t> padded = draws;
  padded.insert(padded.end(), draws.begin(), draws.begin() + 3);
  EXPECT_EQ(dealt, padded);
}

// 800 / 150 / 50 examples: each class's weights sum to 1, so each draw is of class c with
// probability exactly 1/3. Over 20 epochs (N = 20,000 draws) a class's share has standard
// deviation sqrt((1/3)(2/3)/N) = 0.0033; the bound 0.02 is 6 of those (a chance below 1e-8 for a
// correct sampler to miss it), while the random sampler's shares are 0.80 / 0.15 / 0.05.
TEST(Sampler, WeightedClassFrequenciesApproachUniformOnImbalancedLabels) {
  const std::vector<int64_t> labels = sampler_imbalanced_labels({800, 150, 50});
  const int64_t n = int64_t(labels.size());
  const at::Tensor weights = inverse_class_frequency_weights(SamplerLabelledPixels(labels), 3);
  for (bool weighted : {true, false}) {
    std::vector<double> share(3, 0.0);
    for (int64_t epoch = 0; epoch < 20; ++epoch) {
      ShardOptions o;
      o.seed = 42, o.epoch = epoch;
      if (weighted) o.weights = weights;
      for (int64_t i : shard_indices(n, o)) share[std::size_t(labels[std::size_t(i)])] += 1.0 / double(20 * n);
    }
    if (!weighted) {  // what the weights correct: 0.80 / 0.15 / 0.05
      for (std::size_t c = 0; c < 3; ++c) EXPECT_GT(std::abs(share[c] - 1.0 / 3), 0.15) << "class " << c;
      continue;
    }
    for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(share[c], 1.0 / 3, 0.02) << "class " << c;
    std::cout << "[ measured ] weighted sampler, class shares over 20,000 draws: " << share[0] << " " << share[1]
              << " " << share[2] << " (bound |share - 1/3| <= 0.02)\n";
  }
}

// The loader follows the weighted draws, rank by rank, whatever the number of workers.
TEST(Sampler, WeightedLoaderBatchesFollowTheDrawsWhateverTheWorkers) {
  auto data = std::make_shared<SamplerLabelledPixels>(sampler_imbalanced_labels({30, 8, 3}));
  Compose to_tensor({Registry<Transform>::instance().get("to_tensor").make(Config(YAML::Load("{}")), {})});
  for (int64_t rank = 0; rank < 2; ++rank) {
    ShardOptions shard;
    shard.seed = 3, shard.rank = rank, shard.world_size = 2;
    shard.weights = inverse_class_frequency_weights(*data, 3);
    std::vector<std::vector<int64_t>> seen;
    for (int64_t workers : {0, 2}) {
      LoaderOptions o;
      o.batch_size = 4;
      o.workers = workers;
      o.shard = shard;
      DataLoader loader(data, to_tensor, o);
      std::vector<int64_t> indices;
      for (auto& b : test::load_epoch(loader, 1))
        for (int64_t k = 0; k < b.inputs.size(0); ++k) indices.push_back(std::lround(b.inputs[k].item<double>() * 255));
      seen.push_back(indices);
    }
    shard.epoch = 1;
    EXPECT_EQ(seen[0], shard_indices(41, shard)) << "rank " << rank;
    EXPECT_EQ(seen[1], seen[0]) << "rank " << rank;
  }
}

}  // namespace
}  // namespace trainrun
