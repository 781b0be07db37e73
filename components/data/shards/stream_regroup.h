// Shard streams regrouped when a run resumes with another world size or data.workers: what the
// checkpoint's streams had not yet delivered of the epoch (each sample in a shuffle buffer, the
// rest of the shard each was reading, the shards it had not opened) is dealt to the new streams,
// each taking exactly as many samples as its batches of the rest of the epoch need, a shard split
// between two streams where a share ends inside it. Every sample of the epoch not yet seen is
// then read once and none twice; only the order differs from an uninterrupted run's. Shards a
// stream drew at random after its own (resampled, shard_stream.h) are not the epoch's data and
// are left out. Counting needs each shard's size: sizes.json / _info.json's, else num_samples
// spread evenly over the shards (`estimated`).
#pragma once

#include "components/data/shards/shard_stream.h"

#include <string>
#include <vector>

namespace trainrun::wds {

// A checkpoint's stream: the plan it was opened with and its state after the last batch taken.
struct SavedStream {
  StreamPlan plan;
  StreamState state;
};

struct Regrouped {
  std::vector<StreamState> states;  // for this rank's new streams
  int64_t supply = 0;               // samples the old streams had left in the epoch
  int64_t demand = 0;               // samples the new world's streams take in the rest of the epoch
  bool estimated = false;           // shard sizes taken as num_samples / shards
};

// The new streams' states for `rank`, its streams taking `demand[s]` samples each (the same on
// every rank) of a world of `world` ranks. Every rank computes the same deal. Throws
// std::invalid_argument when a saved state cannot be regrouped (one written before in_item was
// kept, or of another epoch).
Regrouped regroup_streams(const ShardSet& set, const std::vector<SavedStream>& saved, int64_t epoch,
                          const std::vector<int64_t>& demand, int64_t world, int64_t rank);

}  // namespace trainrun::wds
