// Opening a shard, as webdataset's gopen.py: a byte stream from a local file, over HTTP(S), or
// from a copy downloaded whole into a cache folder first.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun::wds {

// A shard that cannot be opened or read: "URL: what is wrong".
struct ShardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How shards are opened.
struct OpenOptions {
  std::vector<std::string> headers;  // sent with every HTTP request (the Hub's token)
  std::string cache_dir;             // when set, a remote shard is downloaded there whole, then read
  int64_t retries = 3;               // HTTP: reconnections (a Range request from the last byte) per shard
};

// A shard's bytes, as the tar reader takes them.
struct Source {
  virtual ~Source() = default;
  virtual std::size_t read(char* out, std::size_t n) = 0;  // 0 at the end; throws ShardError
  virtual int64_t skip(int64_t n) { return 0; }            // bytes skipped without reading; 0: not possible
};

// The shard at `url` from byte `offset` on. Throws ShardError.
std::unique_ptr<Source> open_source(const std::string& url, int64_t offset, const OpenOptions& options);

// An uncompressed tar is reopened at a byte offset; a compressed one is read from its start
// and the members before the offset skipped.
bool seekable(const std::string& url);

}  // namespace trainrun::wds
