// WebDataset tar shards (data.dataset: {name: webdataset}): samples read as webdataset's
// tariterators reads them, from local files, HTTP(S) or the Hugging Face Hub, as a stream.
//
// A shard is a POSIX tar; its regular members are grouped into samples as group_by_keys does
// (webdataset e0953f9, src/webdataset/tariterators.py):
//   - a member's key is its path up to the first dot of its base name, its field the rest
//     (base_plus_ext: "a.b/c.seg.jpg" -> key "a.b/c", field "seg.jpg"); a name whose base name has
//     no dot is left out; fields are lower-cased;
//   - top-level `__*__` members and names starting `__X__/` or equal to `__X__` are metadata, left out;
//   - consecutive members with the same key make one sample; a field seen twice in one sample is an
//     error ("duplicate file name"); a sample never continues into the next shard.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainrun::wds {

// One sample: __key__, __url__ and a field per member.
struct RawSample {
  std::string key;
  std::string url;
  int64_t offset = 0;  // the byte offset of its first member's header in the shard: where it is reread from
  std::map<std::string, std::string> fields;  // lower-cased field ("jpg", "seg.jpg", "cls") -> the member's bytes
};

// base_plus_ext: (key, field) of a member name, nullopt when the base name has no dot.
std::optional<std::pair<std::string, std::string>> base_plus_ext(const std::string& name);

// Whether tar_file_iterator leaves a member out as metadata.
bool is_meta(const std::string& name);

// The shard URLs of one pattern, as webdataset's expand_urls: split on "::", then each part
// brace-expanded as braceexpand does ("{000000..000127}" keeps the zero padding, "{a,b}" lists,
// several groups multiply). Throws std::invalid_argument on an unbalanced brace.
std::vector<std::string> expand_urls(const std::string& pattern);

// How shards are opened.
struct OpenOptions {
  std::vector<std::string> headers;  // sent with every HTTP request (the Hub's token)
  std::string cache_dir;             // when set, a remote shard is downloaded there whole, then read
  int64_t retries = 3;               // HTTP: reconnections (a Range request from the last byte) per shard
};

// The samples of one shard from `offset` (0, or a sample's RawSample::offset), read as a stream.
class ShardReader {
 public:
  ShardReader(const std::string& url, int64_t offset = 0, const OpenOptions& options = {});
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  // The next sample; nullopt at the end of the shard. Throws ShardError.
  std::optional<RawSample> next();
  // The offset of the first member not yet part of a returned sample.
  int64_t position() const;

 private:
  std::optional<RawSample> next_grouped();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A shard that cannot be opened or read: "URL: what is wrong".
struct ShardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every sample of `urls` in order, each shard read on its own.
std::vector<RawSample> read_samples(const std::vector<std::string>& urls, const OpenOptions& options = {});

// Why the shard cannot be opened and its first sample read (empty when it can): `trainrun check`.
std::string open_problem(const std::string& url, const OpenOptions& options = {});

// The shards of one split of data.dataset: {name: webdataset} and how their samples become examples.
struct ShardSet {
  std::vector<std::string> urls;  // expanded; hf-hub: resolved to the Hub's resolve URLs
  std::vector<int64_t> sizes;     // samples per shard when a sizes.json / _info.json says, else empty
  int64_t num_samples = 0;        // the epoch: num_samples / world samples per rank (training)
  bool shuffle_shards = true;     // training: the shard order drawn from seed + epoch
  int64_t buffer = 0;             // training: the sample shuffle buffer (0: the shards' own order)
  std::string image_key;          // empty: the first of jpg jpeg png webp bmp the sample has
  std::string label_key = "cls";  // a field holding the label as text, else that key of the json field
  int64_t channels = 3;
  OpenOptions open;
  std::string what;  // "data.dataset.urls", for messages
};

}  // namespace trainrun::wds
