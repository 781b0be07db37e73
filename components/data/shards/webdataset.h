// WebDataset tar shards (data.dataset: {name: webdataset}): samples read as webdataset's
// tariterators reads them, from local files, HTTP(S) or the Hugging Face Hub, as a stream. The
// reader is split as webdataset's own modules are, one file per stage: shard_urls (shardlists.py:
// patterns to URLs), shard_source (gopen.py: a file, HTTP, the cache), tar_samples
// (tariterators.py: tar members to samples); then shard_stream (a loader stream and its state)
// and shard_writer (writer.py).
#pragma once

#include "components/data/shards/shard_source.h"
#include "components/data/shards/shard_urls.h"
#include "components/data/shards/tar_samples.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun::wds {

// The shards of one split of data.dataset: {name: webdataset} and how their samples become examples.
struct ShardSet {
  std::vector<std::string> urls;  // expanded; hf-hub: resolved to the Hub's resolve URLs
  std::vector<int64_t> sizes;     // samples per shard when a sizes.json / _info.json says, else empty
  int64_t num_samples = 0;        // the epoch: num_samples / world samples per rank (training)
  bool shuffle_shards = true;     // training: the shard order drawn from seed + epoch
  int64_t buffer = 0;             // training: the sample shuffle buffer (0: the shards' own order)
  std::string image_key;          // empty: the first of jpg jpeg png webp bmp the sample has
  std::string label_key = "cls";  // a field holding the label as text, else that key of the json field
  bool multilabel = false;        // a set of labels per sample (a json list, or indices in a text field)
  int64_t channels = 3;
  OpenOptions open;
  std::string what;  // "data.dataset.urls", for messages
};

}  // namespace trainrun::wds
