#include "components/data/loader/sampler.h"

#include "components/data/dataset.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

namespace trainrun {

std::vector<int64_t> shard_indices(int64_t n, const ShardOptions& o) {
  std::vector<int64_t> all(n);
  if (o.shuffle && n > 0) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(o.seed + uint64_t(o.epoch));
    at::Tensor order;
    if (o.weights.defined()) {
      if (o.weights.numel() != n)
        throw std::invalid_argument("sampler: " + std::to_string(o.weights.numel()) + " weights for " +
                                    std::to_string(n) + " examples");
      // WeightedRandomSampler.__iter__: torch.multinomial(weights, num_samples, replacement=True,
      // generator=g) on float64 weights; the same kernel and generator draws here.
      order = at::multinomial(o.weights, n, /*replacement=*/true, gen);
    } else {
      order = at::randperm(n, gen, at::kLong);
    }
    std::copy(order.data_ptr<int64_t>(), order.data_ptr<int64_t>() + n, all.begin());
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

at::Tensor inverse_class_frequency_weights(const Dataset& d, int64_t num_classes) {
  const std::vector<int64_t> counts = class_counts(d, num_classes);
  at::Tensor weights = at::empty({int64_t(d.size())}, at::kDouble);
  double* w = weights.data_ptr<double>();
  for (std::size_t i = 0; i < d.size(); ++i) w[i] = 1.0 / double(counts[std::size_t(d.label(i))]);
  return weights;
}

}  // namespace trainrun
