// Which examples a rank sees in an epoch, with torch.utils.data.DistributedSampler's semantics.
#pragma once

#include <cstdint>
#include <vector>

namespace trainrun {

struct ShardOptions {
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t world_size = 1;
  // Training pads to a multiple of the world size by repeating the first indices (as
  // DistributedSampler does); evaluation does not, so every example counts exactly once.
  bool pad = true;
};

// Indices for one rank: randperm(n) from a generator seeded with seed + epoch (the same
// permutation torch.randperm gives), padded, then every world_size-th from `rank`.
std::vector<int64_t> shard_indices(int64_t n, const ShardOptions& o);

}  // namespace trainrun
