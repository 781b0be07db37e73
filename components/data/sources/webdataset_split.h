// One split of data.dataset: {name: webdataset}: its shards read as streams, each sample decoded
// into an example (the image field, the label from a text field or the json field).
#pragma once

#include "components/data/shards/webdataset.h"
#include "components/data/streaming_dataset.h"

#include <cstdint>
#include <memory>

namespace trainrun {

class WebDatasetSplit final : public StreamingDataset {
 public:
  WebDatasetSplit(std::shared_ptr<wds::ShardSet> set, int64_t num_classes)
      : set_(std::move(set)), num_classes_(num_classes) {}
  std::size_t size() const override { return std::size_t(set_->num_samples); }
  const wds::ShardSet& shards() const override { return *set_; }

  // By position in the shards' own order: read from the first shard on (preflight's first
  // example, `check`); the loader reads streams, not this.
  Example get(std::size_t i) const override { return from_sample(nth(i), nullptr); }
  Example get_region(std::size_t i, const RegionPicker& pick) const override { return from_sample(nth(i), &pick); }
  int64_t label(std::size_t i) const override { return label_of(nth(i)); }
  bool multilabel() const override { return set_->multilabel; }
  std::vector<int64_t> labels(std::size_t i) const override { return labels_of(nth(i)); }
  Example from_sample(const wds::RawSample& s, const RegionPicker* pick) const override;

 private:
  int64_t label_of(const wds::RawSample& s) const;
  // A multi-label sample's classes, sorted, each once; UnreadableFile without any.
  std::vector<int64_t> labels_of(const wds::RawSample& s) const;
  wds::RawSample nth(std::size_t i) const;

  std::shared_ptr<wds::ShardSet> set_;
  int64_t num_classes_;
};

}  // namespace trainrun
