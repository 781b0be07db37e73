#include "components/data/batch_transform.h"

#include <ATen/ATen.h>

namespace trainrun {

at::Tensor soft_targets(const at::Tensor& targets, int64_t num_classes, double smoothing) {
  if (at::isFloatingType(targets.scalar_type())) return targets;
  const double off = smoothing / double(num_classes), on = 1.0 - smoothing + off;
  return at::full({targets.size(0), num_classes}, off, at::kFloat).scatter_(1, targets.view({-1, 1}), on);
}

Rng batch_rng(uint64_t seed, int64_t epoch, int64_t rank, int64_t batch_index) {
  // Four words, where an example's stream has three: the streams never coincide.
  std::seed_seq seq{seed, uint64_t(epoch), uint64_t(rank), uint64_t(batch_index)};
  return Rng(seq);
}

}  // namespace trainrun
