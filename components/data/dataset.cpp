#include "components/data/dataset.h"

#include "components/data/streaming_dataset.h"

#include <algorithm>

namespace trainrun {

Example Dataset::get_region(std::size_t index, const RegionPicker& pick) const {
  Example ex = get(index);
  CropBox b = pick(ex.image.size(0), ex.image.size(1));
  ex.image = ex.image.narrow(0, b.top, b.height).narrow(1, b.left, b.width);
  return ex;
}

const StreamingDataset* streaming_source(const Dataset& d) {
  if (const auto* subset = dynamic_cast<const Subset*>(&d)) return streaming_source(subset->base());
  return dynamic_cast<const StreamingDataset*>(&d);
}

namespace {

void check_countable(const Dataset& d) {
  // Counting would read every shard: a stream has no label index.
  if (streaming_source(d))
    throw DataError("per-class counts (data.sampler: weighted, train.loss.weight: balanced, pos_weight: auto) need "
                    "a dataset of files; webdataset shards are read as streams");
}

std::string outside(std::size_t i, int64_t label, int64_t num_classes) {
  return "example " + std::to_string(i) + " has label " + std::to_string(label) + ", outside 0-" +
         std::to_string(num_classes - 1);
}

}  // namespace

std::vector<int64_t> class_counts(const Dataset& d, int64_t num_classes) {
  check_countable(d);
  std::vector<int64_t> counts(std::size_t(std::max<int64_t>(num_classes, 0)), 0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const int64_t label = d.label(i);
    if (label < 0 || label >= num_classes) throw DataError(outside(i, label, num_classes));
    ++counts[std::size_t(label)];
  }
  return counts;
}

std::vector<int64_t> positive_counts(const Dataset& d, int64_t num_classes) {
  check_countable(d);
  std::vector<int64_t> counts(std::size_t(std::max<int64_t>(num_classes, 0)), 0);
  for (std::size_t i = 0; i < d.size(); ++i)
    for (int64_t label : d.labels(i)) {
      if (label < 0 || label >= num_classes) throw DataError(outside(i, label, num_classes));
      ++counts[std::size_t(label)];
    }
  return counts;
}

}  // namespace trainrun
