// Batches from a dataset: decode + transform on `workers` threads, a bounded prefetch window,
// batches in sampler order. Only the window's batches are ever held in memory. A dataset read by
// index and a streaming one (streaming_dataset.h) are loaded by two types, map_loader.h and
// stream_loader.h, over what they share (batch_loader.h); DataLoader holds the one its dataset needs.
#pragma once

#include "components/data/batch_transform.h"
#include "components/data/dataset.h"
#include "components/data/loader/sampler.h"
#include "components/data/transform.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace trainrun {

class BatchLoader;

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
  // A test's record (TRAINRUN_RECORD_SAMPLE_IDS, runner/train): non-empty = the folder where a
  // dataset read by index appends, per batch it loads, {"epoch", "batch", "rank", "ids"} to
  // rank-<rank>.jsonl, so that tests compare which examples each step took across runs.
  std::string record_ids;
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
  const Dataset& dataset() const;
  int64_t skipped_files() const;  // since the loader was made

  // Streaming datasets (webdataset shards): max(1, workers) streams per rank, each reading its own
  // shards on a thread of its own (stream_loader.h); batch b of a training epoch is the next batch
  // of stream b % streams, as a DataLoader's workers take turns. Evaluation takes the streams in
  // turn, each to its end.
  bool streaming() const;
  // Where the streams stand after the last batch next() returned (null for a dataset read by
  // index: its sampler order and the batch count say it all). restore(state) before
  // start_epoch(epoch, skip) continues from there when the state is of that epoch and batch;
  // without one, start_epoch replays the skipped batches' samples (read, not decoded).
  nlohmann::json state() const;
  void restore(const nlohmann::json& state);

 private:
  std::unique_ptr<BatchLoader> impl_;
};

}  // namespace trainrun
