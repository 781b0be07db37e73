// Batches from a dataset: decode + transform on `workers` threads, a bounded prefetch window,
// batches in sampler order. Only the window's batches are ever held in memory.
#pragma once

#include "components/data/batch_transform.h"
#include "components/data/dataset.h"
#include "components/data/sampler.h"
#include "components/data/transform.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

class ThreadPool;

struct LoaderOptions {
  int64_t batch_size = 64;
  int64_t workers = 0;  // 0 = load on the calling thread
  int64_t prefetch_batches_per_worker = 2;
  bool drop_last = false;
  // data.on_bad_file: skip = an example whose file cannot be decoded (UnreadableFile) is left
  // out of its batch with a warning naming the file; error = the exception stops the run.
  bool skip_bad_files = true;
  ShardOptions shard;
  // Run on each collated batch, in order, on the loader's threads (training: data.batch_transforms).
  std::vector<std::shared_ptr<BatchTransform>> batch_transforms;
  int64_t num_classes = 0;  // what the batch transforms are told
  // DataLoader(pin_memory=True): each batch's tensors end in page-locked host memory, made on the
  // loader's threads, so that the copy to a CUDA device can be asynchronous (.to(device,
  // non_blocking=true)); from pageable memory that copy waits for the host. Needs CUDA: set only
  // for a CUDA run (loader_options).
  bool pin_memory = false;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options);
  ~DataLoader();

  // Starts an epoch (reshuffles with seed + epoch); `skip_batches` are not even decoded.
  void start_epoch(int64_t epoch, int64_t skip_batches = 0);
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  int64_t examples_per_epoch() const;  // on this rank
  const Dataset& dataset() const { return *dataset_; }
  int64_t skipped_files() const { return skipped_->load(); }  // since the loader was made

 private:
  struct Loaded {  // one example after its transforms; input undefined when skipped
    at::Tensor input;
    int64_t label = 0;
    std::string error;  // why it was skipped
  };
  struct PendingBatch;
  // `slot`: the example's place in its batch's preallocated inputs (or undefined).
  Loaded load_example(int64_t index, int64_t epoch, const at::Tensor& slot) const;
  at::Tensor allocate_inputs(int64_t examples) const;
  static at::Tensor slot(const at::Tensor& inputs, std::size_t k);
  // The batch's examples stacked (or already in `inputs`), then the batch transforms.
  Batch collate(const std::vector<Loaded>& examples, const at::Tensor& inputs, int64_t batch_index, int64_t epoch) const;
  static Batch pinned(Batch batch);
  void fill();

  std::shared_ptr<const Dataset> dataset_;
  Compose transforms_;
  LoaderOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<int64_t> order_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;  // next batch to schedule
  std::deque<std::future<Batch>> pending_;
  std::vector<int64_t> example_shape_;  // of the last batch's inputs (one example), when float
  std::shared_ptr<std::atomic<int64_t>> skipped_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace trainrun
