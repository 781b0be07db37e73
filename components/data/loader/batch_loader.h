// What a map-style and a streaming loader share (DataLoader, loader.h, holds one of the two):
// decode + transform on `workers` threads, one task per example, a bounded prefetch window of
// batches handed out in order, collation with the batch transforms, and pinning.
#pragma once

#include "components/data/loader/loader.h"
#include "components/data/shards/tar_samples.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

class ThreadPool;

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options);
  // A subclass's destructor calls wait_pending() first: the workers' tasks call its read().
  virtual ~BatchLoader();

  virtual void start_epoch(int64_t epoch, int64_t skip_batches) = 0;
  virtual int64_t examples_per_epoch() const = 0;
  virtual bool streaming() const = 0;
  virtual nlohmann::json state() const { return nullptr; }
  virtual void restore(const nlohmann::json& state) {}
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  const Dataset& dataset() const { return *dataset_; }
  int64_t skipped_files() const { return skipped_->load(); }

 protected:
  // Schedules batches up to the prefetch window.
  virtual void fill() = 0;
  // next() found no batch scheduled (always so without workers, which load a batch only when
  // it is asked for): schedules one; the streaming loader waits for one of its streams.
  virtual void refill() { fill(); }
  // next() hands out the oldest scheduled batch.
  virtual void on_batch_taken() {}
  // The example at `index`, or the stream's sample `raw`, cropped to `pick`'s box when given.
  virtual Example read(int64_t index, const wds::RawSample* raw, const RegionPicker* pick) const = 0;

  // Posts one batch's examples (indices, or a stream's samples) to the workers, or loads it here.
  void schedule(std::vector<int64_t> indices, std::vector<wds::RawSample> samples, int64_t batch_index);
  void wait_pending();
  // options_.record_ids: appends {"epoch", "batch", "rank", "ids"} (indices, or a stream's sample keys).
  void record(const nlohmann::json& ids, int64_t batch_index) const;
  int64_t window() const { return std::max<int64_t>(1, options_.workers * options_.prefetch_batches_per_worker); }

  std::shared_ptr<const Dataset> dataset_;
  Compose transforms_;
  LoaderOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;  // next batch to schedule
  std::deque<std::future<Batch>> pending_;

 private:
  struct Loaded {  // one example after its transforms; input undefined when skipped
    at::Tensor input;
    int64_t label = 0;
    std::string error;            // why it was skipped
    std::vector<int64_t> labels;  // a multi-label dataset's
  };
  struct PendingBatch;
  // `slot`: the example's place in its batch's preallocated inputs (or undefined); `raw`: the
  // sample of a streaming dataset (`index` then only seeds its transforms).
  Loaded load_example(int64_t index, int64_t epoch, const at::Tensor& slot, const wds::RawSample* raw) const;
  at::Tensor allocate_inputs(int64_t examples) const;
  static at::Tensor slot(const at::Tensor& inputs, std::size_t k);
  // The batch's examples stacked (or already in `inputs`) with their targets (class indices, or
  // multi-hot rows of num_classes for a multi-label dataset), then the batch transforms.
  Batch collate(const std::vector<Loaded>& examples, const at::Tensor& inputs, int64_t batch_index, int64_t epoch) const;
  static Batch pinned(Batch batch);
  void post(std::shared_ptr<PendingBatch> batch, int64_t batch_index);

  std::vector<int64_t> example_shape_;  // of the last batch's inputs (one example), when float
  std::shared_ptr<std::atomic<int64_t>> skipped_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace trainrun
