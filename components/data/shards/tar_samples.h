// A shard's tar members grouped into samples, as webdataset's tariterators.py reads them
// (webdataset e0953f9, src/webdataset/tariterators.py). A shard is a POSIX tar; its regular
// members are grouped as group_by_keys does:
//   - a member's key is its path up to the first dot of its base name, its field the rest
//     (base_plus_ext: "a.b/c.seg.jpg" -> key "a.b/c", field "seg.jpg"); a name whose base name has
//     no dot is left out; fields are lower-cased;
//   - top-level `__*__` members and names starting `__X__/` or equal to `__X__` are metadata, left out;
//   - consecutive members with the same key make one sample; a field seen twice in one sample is an
//     error ("duplicate file name"); a sample never continues into the next shard.
#pragma once

#include "components/data/shards/shard_source.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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

// Every sample of `urls` in order, each shard read on its own.
std::vector<RawSample> read_samples(const std::vector<std::string>& urls, const OpenOptions& options = {});

// Why the shard cannot be opened and its first sample read (empty when it can): `trainrun check`.
std::string open_problem(const std::string& url, const OpenOptions& options = {});

}  // namespace trainrun::wds
