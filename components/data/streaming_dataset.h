// A dataset read as a stream of tar shards (webdataset), what torch.utils.data's IterableDataset
// is beside its map-style Dataset: the loader reads the shards in order (shards/shard_stream.h)
// rather than asking for examples by index. It stays a Dataset for what does not train on it:
// size() is the declared epoch length, get(i) reads the shards from their start up to sample i
// (preflight's first example, `trainrun check`).
#pragma once

#include "components/data/dataset.h"

namespace trainrun {

namespace wds {
struct RawSample;
struct ShardSet;
}  // namespace wds

class StreamingDataset : public Dataset {
 public:
  // The shards a loader's streams read (shards/webdataset.h).
  virtual const wds::ShardSet& shards() const = 0;
  // One of those shards' samples as an example, its image cropped to `pick`'s box when given.
  virtual Example from_sample(const wds::RawSample& sample, const RegionPicker* pick) const = 0;
};

// The streaming dataset `d` is, or the one a Subset `d` takes the first samples of; null for a
// dataset read by index.
const StreamingDataset* streaming_source(const Dataset& d);

}  // namespace trainrun
