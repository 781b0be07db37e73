// The errors of data on disk, below everything in components/data/ that reads it: the image
// decoder throws UnreadableFile without knowing what a dataset is.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace trainrun {

// Thrown for problems with the data on disk; the message names the file at fault.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The dataset's folder (its `key` parameter, e.g. root) is not there: `trainrun check` then
// reports what does not need the data before this line.
struct MissingDataFolder : DataError {
  MissingDataFolder(std::string key_, const std::string& what) : DataError(what), key(std::move(key_)) {}
  std::string key;
};

// One example's file cannot be read or decoded. The loader skips the example (and warns) or
// stops the run, as `data.on_bad_file` says.
struct UnreadableFile : DataError {
  using DataError::DataError;
};

}  // namespace trainrun
