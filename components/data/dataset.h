// A dataset is an indexable list of (image, label) examples. Images come out as uint8 HWC
// tensors (what a decoder gives); transforms take them from there. A multi-label dataset
// (train.task: multilabel) gives each example a set of labels instead of one.
#pragma once

#include "components/data/data_error.h"
#include "components/data/image.h"
#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

struct Example {
  at::Tensor image;  // uint8, H x W x C
  int64_t label = 0;            // single-label datasets
  std::vector<int64_t> labels;  // multi-label datasets: the example's classes, sorted (maybe none)
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::size_t size() const = 0;
  virtual Example get(std::size_t index) const = 0;  // thread-safe
  virtual int64_t label(std::size_t index) const = 0;  // without decoding the image
  // A multi-label dataset: labels(index) is each example's set of classes, label(index) its first
  // (or -1 for none), which nothing that counts single labels may use.
  virtual bool multilabel() const { return false; }
  virtual std::vector<int64_t> labels(std::size_t index) const { return {label(index)}; }
  // get(index) with the image cropped to pick(H, W): the same pixels. Image files override it to
  // decode only the box of a JPEG.
  virtual Example get_region(std::size_t index, const RegionPicker& pick) const;
  // The file the example is read from, when it is one whole image file (image folders):
  // `trainrun shards` copies its bytes rather than re-encoding the pixels.
  virtual std::optional<std::string> source_file(std::size_t index) const { return std::nullopt; }
};

// What a dataset entry builds: a train and an eval split, and the class names.
struct DatasetSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> eval;
  std::vector<std::string> classes;
  std::string eval_split_name = "test";
  // Rows of a listing the dataset left out, one line each naming the file and line (image_csv: an
  // unknown label, no label, an image listed twice or missing). The job stops on the first under
  // data.on_bad_file: error, and warns with their count under skip.
  std::vector<std::string> left_out;
};

// Examples per class, counts[c] for labels 0 .. num_classes - 1, from label(i): no image is
// decoded. A label outside that range is a DataError.
std::vector<int64_t> class_counts(const Dataset& d, int64_t num_classes);

// Of a multi-label dataset: the examples that have each class, counts[c] for 0 .. num_classes - 1.
std::vector<int64_t> positive_counts(const Dataset& d, int64_t num_classes);

template <>
struct Kind<Dataset> {
  static constexpr const char* name = "datasets";
  static constexpr const char* singular = "dataset";  // in messages: "unknown dataset 'x'"
  using Factory = std::function<DatasetSplits(const Config&)>;
};

// The first `limit` examples of another dataset (data.max_train_samples & co). Of a streaming
// dataset (streaming_dataset.h), the first `limit` samples of its stream.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::size_t limit) : base_(std::move(base)), size_(limit) {}
  std::size_t size() const override { return size_; }
  Example get(std::size_t i) const override { return base_->get(i); }
  Example get_region(std::size_t i, const RegionPicker& pick) const override { return base_->get_region(i, pick); }
  int64_t label(std::size_t i) const override { return base_->label(i); }
  bool multilabel() const override { return base_->multilabel(); }
  std::vector<int64_t> labels(std::size_t i) const override { return base_->labels(i); }
  std::optional<std::string> source_file(std::size_t i) const override { return base_->source_file(i); }
  const Dataset& base() const { return *base_; }

 private:
  std::shared_ptr<const Dataset> base_;
  std::size_t size_;
};

}  // namespace trainrun
