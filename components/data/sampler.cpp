#include "components/data/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace trainrun {

std::vector<int64_t> shard_indices(int64_t n, const ShardOptions& o) {
  std::vector<int64_t> all(n);
  if (o.shuffle) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(o.seed + uint64_t(o.epoch));
    at::Tensor perm = at::randperm(n, gen, at::kLong);
    std::copy(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n, all.begin());
  } else {
    for (int64_t i = 0; i < n; ++i) all[i] = i;
  }
  if (o.pad && n > 0) {
    int64_t total = (n + o.world_size - 1) / o.world_size * o.world_size;
    for (int64_t i = n; i < total; ++i) all.push_back(all[i - n]);
  }
  std::vector<int64_t> mine;
  for (std::size_t i = std::size_t(o.rank); i < all.size(); i += std::size_t(o.world_size)) mine.push_back(all[i]);
  return mine;
}

}  // namespace trainrun
