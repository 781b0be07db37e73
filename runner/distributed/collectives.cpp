// The Accelerator's collectives (accelerator.h): sums, means, gathers and the barrier over the
// process group; with one process they are the identity.
#include "runner/distributed/accelerator.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/torch.h>

namespace trainrun {

at::Tensor Accelerator::reduce_sum(const at::Tensor& t) const {
  at::Tensor x = t.detach().to(device_, at::kDouble).clone();
  if (group_) {
    std::vector<at::Tensor> v{x};
    group_->allreduce(v)->wait();
  }
  return x.cpu();
}

double Accelerator::mean(double value) const {
  return reduce_sum(at::scalar_tensor(value, at::kDouble)).item<double>() / double(world_.world_size);
}

at::Tensor Accelerator::gather_for_metrics(const at::Tensor& t) const {
  if (!group_) return t;
  // all_gather needs equal shapes: pad to the longest shard, then trim each to its length.
  at::Tensor len = at::full({1}, t.size(0), at::TensorOptions().dtype(at::kLong).device(device_));
  std::vector<at::Tensor> lens(size_t(world_.world_size));
  for (auto& l : lens) l = at::empty_like(len);
  std::vector<std::vector<at::Tensor>> out_lens{lens};
  std::vector<at::Tensor> in_len{len};
  group_->allgather(out_lens, in_len)->wait();
  int64_t longest = 0;
  for (auto& l : out_lens[0]) longest = std::max(longest, l.item<int64_t>());
  auto sizes = t.sizes().vec();
  sizes[0] = longest;
  at::Tensor padded = at::zeros(sizes, t.options().device(device_));
  padded.narrow(0, 0, t.size(0)).copy_(t);
  std::vector<std::vector<at::Tensor>> parts(1);
  for (int64_t r = 0; r < world_.world_size; ++r) parts[0].push_back(at::empty_like(padded));
  std::vector<at::Tensor> in{padded};
  group_->allgather(parts, in)->wait();
  std::vector<at::Tensor> trimmed;
  for (int64_t r = 0; r < world_.world_size; ++r)
    trimmed.push_back(parts[0][size_t(r)].narrow(0, 0, out_lens[0][size_t(r)].item<int64_t>()));
  return at::cat(trimmed).to(t.device());
}

void Accelerator::wait_for_everyone() const {
  if (group_) group_->barrier()->wait();
}

}  // namespace trainrun
