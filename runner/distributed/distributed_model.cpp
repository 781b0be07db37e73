// DistributedModel: DistributedDataParallel for one module on c10d's Reducer (accelerator.h).
#include "runner/distributed/accelerator.h"

#include "runner/distributed/process_group.h"

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/torch.h>

namespace trainrun {

namespace {

// DDP's defaults: the first bucket is small so communication starts early.
constexpr size_t kFirstBucketBytes = 1024 * 1024;

}  // namespace

DistributedModel::DistributedModel(std::shared_ptr<Classifier> module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                                   const AcceleratorOptions& options)
    : module_(std::move(module)), group_(std::move(group)), broadcast_buffers_(options.broadcast_buffers) {
  if (!group_) return;
  std::vector<at::Tensor> params;
  std::unordered_map<size_t, std::string> names;
  for (auto& p : module_->named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen parameters take no part, as in DDP
    names[params.size()] = p.key();
    params.push_back(p.value());
  }
  for (auto& b : module_->buffers()) buffers_.push_back(b);
  std::vector<bool> sparse(params.size(), false);
  size_t cap = size_t(options.bucket_cap_mb) * 1024 * 1024;
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(params, {kFirstBucketBytes, cap}, sparse);
  // As torch.nn.parallel.DistributedDataParallel: buckets in reverse, since backward produces
  // the last layers' gradients first.
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  reducer_ = make_reducer(params, buckets, limits, group_, sparse, int64_t(cap),
                          /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false, names,
                          int64_t(kFirstBucketBytes));
}

DistributedModel::~DistributedModel() = default;

at::Tensor DistributedModel::forward(const at::Tensor& x) {
  if (!reducer_) return module_->forward(x);
  bool grad = at::GradMode::is_enabled();
  if (grad && sync_) reducer_->prepare_for_forward();
  if (grad) reducer_->rebuild_buckets();
  if (broadcast_buffers_ && synced_last_forward_ && !buffers_.empty())
    c10d::broadcast_coalesced(group_, buffers_, 250 * 1024 * 1024, 0);
  at::Tensor out = module_->forward(x);
  if (grad && sync_) {
    synced_last_forward_ = true;
    reducer_->prepare_for_backward({});
  } else {
    synced_last_forward_ = false;
  }
  return out;
}

}  // namespace trainrun
