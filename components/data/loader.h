// Batches from a dataset: decode + transform on `workers` threads, a bounded prefetch window,
// batches in sampler order. Only the window's batches are ever held in memory.
#pragma once

#include "components/data/batch_transform.h"
#include "components/data/dataset.h"
#include "components/data/sampler.h"
#include "components/data/transform.h"

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

namespace wds {
struct RawSample;
}

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

  // Streaming datasets (webdataset shards, Dataset::shards()): max(1, workers) streams per rank,
  // each reading its own shards on a thread of its own (shard_stream.h); batch b of a training
  // epoch is the next batch of stream b % streams, as a DataLoader's workers take turns.
  // Evaluation takes the streams in turn, each to its end.
  bool streaming() const { return dataset_->shards() != nullptr; }
  // Where the streams stand after the last batch next() returned (null for a dataset read by
  // index: its sampler order and the batch count say it all). restore(state) before
  // start_epoch(epoch, skip) continues from there when the state is of that epoch and batch;
  // without one, start_epoch replays the skipped batches' samples (read, not decoded).
  nlohmann::json state() const;
  void restore(const nlohmann::json& state) { restore_ = state; }

 private:
  struct Loaded {  // one example after its transforms; input undefined when skipped
    at::Tensor input;
    int64_t label = 0;
    std::string error;  // why it was skipped
  };
  struct PendingBatch;
  class Feed;
  // `slot`: the example's place in its batch's preallocated inputs (or undefined); `raw`: the
  // sample of a streaming dataset (`index` then only seeds its transforms).
  Loaded load_example(int64_t index, int64_t epoch, const at::Tensor& slot, const wds::RawSample* raw = nullptr) const;
  at::Tensor allocate_inputs(int64_t examples) const;
  static at::Tensor slot(const at::Tensor& inputs, std::size_t k);
  // The batch's examples stacked (or already in `inputs`), then the batch transforms.
  Batch collate(const std::vector<Loaded>& examples, const at::Tensor& inputs, int64_t batch_index, int64_t epoch) const;
  static Batch pinned(Batch batch);
  void fill();
  void fill_streams();
  void start_streams(int64_t epoch, int64_t skip_batches);
  // Posts one batch's examples (indices, or a stream's samples) to the workers, or loads it here.
  void schedule(std::vector<int64_t> indices, std::vector<wds::RawSample> samples, int64_t batch_index);

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

  // Streaming only.
  int64_t streams_ = 1;
  std::vector<std::unique_ptr<Feed>> feeds_;
  std::deque<std::pair<int64_t, nlohmann::json>> pending_states_;  // per pending batch: its stream, the state after it
  std::vector<nlohmann::json> consumed_;  // per stream: the state after its last batch next() returned
  int64_t batches_returned_ = 0;
  int64_t eval_turn_ = 0;  // evaluation: the stream whose turn it is
  std::optional<nlohmann::json> restore_;
};

}  // namespace trainrun
