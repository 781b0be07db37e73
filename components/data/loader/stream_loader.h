// A streaming dataset (streaming_dataset.h: webdataset shards) read as torch.utils.data reads an
// IterableDataset: max(1, workers) streams per rank, each reading its own shards on a thread of
// its own (shards/shard_stream.h); batch b of a training epoch is the next batch of stream
// b % streams, as a DataLoader's workers take turns. Evaluation takes the streams in turn, each to
// its end. A stream has no padding to repeat: num_samples / world examples per rank, the rest of
// the data unread.
#pragma once

#include "components/data/loader/batch_loader.h"

#include <deque>
#include <utility>

namespace trainrun {

class StreamingDataset;
namespace wds {
struct StreamPlan;
}

class StreamLoader final : public BatchLoader {
 public:
  StreamLoader(std::shared_ptr<const Dataset> dataset, const StreamingDataset& source, Compose transforms,
               LoaderOptions options);
  ~StreamLoader() override;

  void start_epoch(int64_t epoch, int64_t skip_batches) override;
  int64_t examples_per_epoch() const override;
  bool streaming() const override { return true; }
  // Where the streams stand after the last batch next() returned. restore(all) (every rank's
  // state: {"ranks": [...]}) before start_epoch(epoch, skip) continues from there when the state
  // is of that epoch, regrouping the streams onto this world's when the world size or the number
  // of streams differ (shards/stream_regroup.h); without one, start_epoch replays the skipped
  // batches' samples (read, not decoded).
  nlohmann::json state() const override;
  void restore(const nlohmann::json& state) override { restore_ = state; }

 private:
  class Feed;
  void fill() override;
  void refill() override;
  void on_batch_taken() override;
  Example read(int64_t index, const wds::RawSample* raw, const RegionPicker* pick) const override;
  // Each stream's state to continue from: restore()'s when it is this epoch's after
  // `skip_batches` batches with this world and stream count, regrouped() when it is this epoch's
  // on another, else none (replay).
  std::optional<std::vector<nlohmann::json>> restored_states(int64_t epoch, int64_t skip_batches);
  std::vector<nlohmann::json> regrouped(const nlohmann::json& all, int64_t epoch, int64_t skip_batches);
  // The plan of stream `stream` of `streams` on `rank` of `world` in `epoch`.
  wds::StreamPlan stream_plan(int64_t epoch, int64_t rank, int64_t world, int64_t stream, int64_t streams,
                              bool train) const;
  void open_feeds(int64_t epoch, int64_t skip_batches, const std::optional<std::vector<nlohmann::json>>& from);
  void fill_eval();

  const StreamingDataset& source_;  // *dataset_, or what the Subset dataset_ limits
  int64_t streams_ = 1;
  std::vector<std::unique_ptr<Feed>> feeds_;
  std::deque<std::pair<int64_t, nlohmann::json>> pending_states_;  // per pending batch: its stream, the state after it
  std::vector<nlohmann::json> consumed_;  // per stream: the state after its last batch next() returned
  int64_t batches_returned_ = 0;
  int64_t eval_turn_ = 0;  // evaluation: the stream whose turn it is
  std::optional<nlohmann::json> restore_;
};

}  // namespace trainrun
