// Which examples a rank sees in an epoch, with torch.utils.data.DistributedSampler's semantics;
// with per-example weights (data.sampler: weighted), WeightedRandomSampler's draws sharded the same way.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace trainrun {

class Dataset;

struct ShardOptions {
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t world_size = 1;
  // Training pads to a multiple of the world size by repeating the first indices (as
  // DistributedSampler does); evaluation does not, so every example counts exactly once.
  bool pad = true;
  // One weight per example (float64), or undefined: when shuffling, the epoch's order is n draws
  // with replacement, WeightedRandomSampler(weights, num_samples=n, replacement=True), instead
  // of a permutation.
  at::Tensor weights;
};

// Indices for one rank: randperm(n) from a generator seeded with seed + epoch (the same
// permutation torch.randperm gives), or with weights torch.multinomial(weights, n, True) from that
// generator (the indices WeightedRandomSampler gives), padded, then every world_size-th from `rank`.
std::vector<int64_t> shard_indices(int64_t n, const ShardOptions& o);

// data.sampler: weighted: 1 / (training examples of its class) for each example, float64, so
// each class is drawn equally often on average (the usual WeightedRandomSampler weights for
// class imbalance). Labels come from Dataset::label: no image is decoded.
at::Tensor inverse_class_frequency_weights(const Dataset& d, int64_t num_classes);

}  // namespace trainrun
