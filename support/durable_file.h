// Files written so that a crash, a kill or a full disk never leaves a half-written file under its
// final name (checkpoints, weights, reports, metrics.jsonl).
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

// "PATH: what failed: the system's reason" (a full disk says "No space left on device").
struct FileWriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Bytes {
  const void* data;
  std::size_t size;
};

// Writes the pieces, in order, to `path` and fsyncs it.
void write_durable(const std::filesystem::path& path, const std::vector<Bytes>& pieces);
inline void write_durable(const std::filesystem::path& path, const std::string& text) {
  write_durable(path, {{text.data(), text.size()}});
}

// write_durable to PATH.tmp, renamed over PATH, the folder fsynced: readers see the old file or
// the new one, never part of one. On failure the .tmp is removed and PATH is untouched; the
// error names PATH.
void write_file_atomic(const std::filesystem::path& path, const std::vector<Bytes>& pieces);
inline void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  write_file_atomic(path, {{text.data(), text.size()}});
}

// A rename or a new entry is durable only once the folder holding it is fsynced.
void fsync_dir(const std::filesystem::path& dir);

}  // namespace trainrun
