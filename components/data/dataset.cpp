#include "components/data/dataset.h"

#include <algorithm>
#include <stdexcept>

namespace trainrun {

Example Dataset::from_sample(const wds::RawSample&, const RegionPicker*) const {
  throw std::logic_error("from_sample: not a streaming dataset");
}

std::vector<int64_t> class_counts(const Dataset& d, int64_t num_classes) {
  // Counting would read every shard: a stream has no label index.
  if (d.shards())
    throw DataError("per-class counts (data.sampler: weighted, loss class_weight: auto) need a dataset of files; "
                    "webdataset shards are read as streams");
  std::vector<int64_t> counts(std::size_t(std::max<int64_t>(num_classes, 0)), 0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const int64_t label = d.label(i);
    if (label < 0 || label >= num_classes)
      throw DataError("example " + std::to_string(i) + " has label " + std::to_string(label) + ", outside 0-" +
                      std::to_string(num_classes - 1));
    ++counts[std::size_t(label)];
  }
  return counts;
}

}  // namespace trainrun
