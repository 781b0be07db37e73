// One loader stream over WebDataset shards: what a DataLoader worker of a webdataset pipeline
// reads (split_by_node, then split_by_worker, then a shuffle buffer), made deterministic and
// resumable. Its state after any sample (StreamState) is small: the shard and byte offset it reads
// next, and where each sample in its shuffle buffer was read from, so a checkpoint can hold it and a
// resumed run reopens the shards there instead of replaying the epoch.
//
// Training: the epoch's shard order is a permutation drawn from seed + epoch, the same on every
// rank; rank r takes every world-th shard from r, and stream s of `streams` every streams-th of
// those from s. A stream that reaches the end of its own shards goes on with shards drawn at random
// from all of them (seeded by seed, epoch, rank, stream and position: webdataset's
// ResampledShards), so every rank delivers the same number of samples and none waits at a
// collective. Samples pass through a shuffle buffer of `buffer` samples, emptied (in random order)
// at the end of the stream's own shards and of each resampled shard. Evaluation: the stream's own
// shards in order, once, no buffer.
#pragma once

#include "components/data/shards/webdataset.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace trainrun::wds {

// A part of a shard a regrouped stream reads (shards/stream_regroup.h): from byte `offset`, which
// is where the shard's sample number `first` starts, `skip` samples passed over, then `take`
// samples (-1: to the shard's end).
struct WorkItem {
  int64_t shard = 0;  // an index into ShardSet::urls
  int64_t offset = 0;
  int64_t first = 0;
  int64_t skip = 0;
  int64_t take = -1;
  bool operator==(const WorkItem& o) const {
    return shard == o.shard && offset == o.offset && first == o.first && skip == o.skip && take == o.take;
  }
};

// Where a stream stands after a sample.
struct StreamState {
  int64_t seq = 0;       // the shard it reads next: an index into the stream's shard sequence
  int64_t offset = 0;    // where that shard's next sample starts
  int64_t in_item = 0;   // samples read of shard `seq` so far (-1: not known, a state written before it was kept)
  bool draining = false;  // a pass ended: the buffer empties before `seq` is read
  std::vector<std::pair<int64_t, int64_t>> buffer;  // (seq, offset) of each buffered sample, in buffer order
  int64_t draws = 0;      // random draws made so far
  int64_t delivered = 0;  // samples handed out
  // A regrouped stream's sequence for the rest of its epoch, instead of its own shards.
  std::optional<std::vector<WorkItem>> items;

  nlohmann::json to_json() const;
  static StreamState from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
};

struct StreamPlan {
  std::shared_ptr<const ShardSet> set;
  uint64_t seed = 0;
  int64_t epoch = 0, rank = 0, world = 1, stream = 0, streams = 1;
  bool train = true;
  bool skip_bad_shards = true;  // data.on_bad_file: skip = a shard that fails is left (warning) for the next
};

class SampleStream {
 public:
  explicit SampleStream(StreamPlan plan, const StreamState& from = {});
  // The next sample; nullopt only for an evaluation stream at its end. Throws DataError.
  std::optional<RawSample> next();
  const StreamState& state() const { return state_; }
  int64_t own_shard_count() const { return int64_t(own_.size()); }
  // The URL of the stream's i-th shard.
  const std::string& url(int64_t i) const;

 private:
  // Where sequence entry `seq` starts reading.
  int64_t start_offset(int64_t seq) const;
  // Moves on to sequence entry seq + 1; true when that ends the pass.
  bool end_entry(int64_t seq);
  struct Buffered {
    RawSample sample;
    int64_t seq = 0;
  };
  // The next sample of the current pass, nullopt at its end (evaluation: at the end of the stream).
  std::optional<Buffered> read_in_pass();
  bool pass_ends_after(int64_t seq) const;
  uint64_t draw();

  StreamPlan plan_;
  std::vector<int64_t> own_;  // indices into plan_.set->urls
  std::vector<WorkItem> items_;  // a regrouped stream's: own_[i] is items_[i].shard
  StreamState state_;
  std::vector<Buffered> buffer_;
  std::unique_ptr<ShardReader> reader_;
  int64_t empty_shards_ = 0;  // shards ended in a row without a sample
};

// The shard indices (into `n` shards) a stream reads first in an epoch, as above.
std::vector<int64_t> own_shards(int64_t n, const StreamPlan& plan);

}  // namespace trainrun::wds
