// A dataset is an indexable list of (image, label) examples. Images come out as uint8 HWC
// tensors (what a decoder gives); transforms take them from there.
#pragma once

#include "components/data/image.h"
#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

namespace wds {
struct RawSample;
struct ShardSet;
}

struct Example {
  at::Tensor image;  // uint8, H x W x C
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::size_t size() const = 0;
  virtual Example get(std::size_t index) const = 0;  // thread-safe
  virtual int64_t label(std::size_t index) const = 0;  // without decoding the image
  // get(index) with the image cropped to pick(H, W): the same pixels. Image files override it to
  // decode only the box of a JPEG.
  virtual Example get_region(std::size_t index, const RegionPicker& pick) const;
  // The file the example is read from, when it is one whole image file (image folders):
  // `trainrun shards` copies its bytes rather than re-encoding the pixels.
  virtual std::optional<std::string> source_file(std::size_t index) const { return std::nullopt; }
  // A dataset read as a stream of tar shards (webdataset): the loader reads the shards in order
  // (components/data/webdataset.h) instead of asking for examples by index; size() is the
  // declared epoch length.
  virtual const wds::ShardSet* shards() const { return nullptr; }
  // A streaming dataset's sample as an example (its image cropped to `pick`'s box when given).
  virtual Example from_sample(const wds::RawSample& sample, const RegionPicker* pick) const;
};

// What a dataset entry builds: a train and an eval split, and the class names.
struct DatasetSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> eval;
  std::vector<std::string> classes;
  std::string eval_split_name = "test";
};

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

// Examples per class, counts[c] for labels 0 .. num_classes - 1, from label(i): no image is
// decoded. A label outside that range is a DataError.
std::vector<int64_t> class_counts(const Dataset& d, int64_t num_classes);

template <>
struct Kind<Dataset> {
  static constexpr const char* name = "datasets";
  static constexpr const char* singular = "dataset";  // in messages: "unknown dataset 'x'"
  using Factory = std::function<DatasetSplits(const Config&)>;
};

// The first `limit` examples of another dataset (data.max_train_samples & co).
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::size_t limit) : base_(std::move(base)), size_(limit) {}
  std::size_t size() const override { return size_; }
  Example get(std::size_t i) const override { return base_->get(i); }
  Example get_region(std::size_t i, const RegionPicker& pick) const override { return base_->get_region(i, pick); }
  int64_t label(std::size_t i) const override { return base_->label(i); }
  std::optional<std::string> source_file(std::size_t i) const override { return base_->source_file(i); }
  const wds::ShardSet* shards() const override { return base_->shards(); }
  Example from_sample(const wds::RawSample& s, const RegionPicker* pick) const override { return base_->from_sample(s, pick); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::size_t size_;
};

}  // namespace trainrun
