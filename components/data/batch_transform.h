// A transform of a collated batch (LibTorch's BatchTransform idea, timm's Mixup): it sees every
// example of the batch at once and may turn class-index targets into probabilities. It runs on the
// loader's threads after the batch is collated (training batches only: evaluation is untouched).
// Its random draws come from a generator the loader seeds from (seed, epoch, rank, batch index),
// so a batch is the same whatever the number of workers, run after run.
#pragma once

#include "components/data/transform.h"
#include "registry/registry.h"

#include <memory>
#include <vector>

namespace trainrun {

// A batch as the loader gives it.
struct Batch {
  at::Tensor inputs;   // B x C x H x W float
  at::Tensor targets;  // B int64 class indices, or B x classes float probabilities (a batch transform's)
};

// What a batch transform is told about the batch beyond its tensors.
struct BatchContext {
  int64_t num_classes = 0;  // the dataset's classes (targets as probabilities have this width)
  int64_t epoch = 0;
  int64_t batch_index = 0;  // in this rank's epoch
};

class BatchTransform {
 public:
  virtual ~BatchTransform() = default;
  // Changes `batch` in place or replaces its tensors: inputs B x C x H x W float; targets B int64
  // class indices, or B x num_classes float probabilities (a transform before this one mixed them).
  virtual void operator()(Batch& batch, const BatchContext& context, Rng& rng) const = 0;
  // True when its targets are probabilities: the loss must take them (cross_entropy does).
  virtual bool makes_probabilities() const { return false; }
};

template <>
struct Kind<BatchTransform> {
  static constexpr const char* name = "batch_transforms";
  static constexpr const char* singular = "batch transform";  // in messages: "unknown batch transform 'x'"
  using Factory = std::function<std::shared_ptr<BatchTransform>(const Config&)>;
};

// Targets as probabilities: one-hot rows of `num_classes` for class indices, with `smoothing`
// spread as timm's mixup_target does (off = smoothing / K, on = 1 - smoothing + off); float
// targets are returned as they are.
at::Tensor soft_targets(const at::Tensor& targets, int64_t num_classes, double smoothing = 0.0);

// The loader's generator for a batch: a stream of its own for (seed, epoch, rank, batch index),
// apart from every example's (seed, epoch, index) stream.
Rng batch_rng(uint64_t seed, int64_t epoch, int64_t rank, int64_t batch_index);

}  // namespace trainrun
