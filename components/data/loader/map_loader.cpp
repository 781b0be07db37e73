#include "components/data/loader/map_loader.h"

#include <algorithm>
#include <fstream>

namespace trainrun {

int64_t MapLoader::examples_per_epoch() const {
  const auto& s = options_.shard;
  int64_t n = int64_t(dataset_->size());
  if (s.pad) return (n + s.world_size - 1) / s.world_size;
  return n / s.world_size + (s.rank < n % s.world_size ? 1 : 0);
}

void MapLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  wait_pending();
  pending_.clear();
  ShardOptions shard = options_.shard;
  shard.epoch = epoch;
  order_ = shard_indices(int64_t(dataset_->size()), shard);
  epoch_ = epoch;
  next_batch_ = skip_batches;
  fill();
}

Example MapLoader::read(int64_t index, const wds::RawSample*, const RegionPicker* pick) const {
  return pick ? dataset_->get_region(std::size_t(index), *pick) : dataset_->get(std::size_t(index));
}

void MapLoader::fill() {
  while (int64_t(pending_.size()) < window() && next_batch_ < batches_per_epoch()) {
    auto begin = order_.begin() + next_batch_ * options_.batch_size;
    auto end = order_.begin() + std::min<int64_t>(int64_t(order_.size()), (next_batch_ + 1) * options_.batch_size);
    const int64_t batch_index = next_batch_++;
    if (!options_.record_ids.empty()) record(nlohmann::json(std::vector<int64_t>(begin, end)), batch_index);
    schedule(std::vector<int64_t>(begin, end), {}, batch_index);
    if (!pool_) break;  // synchronous: load one batch per next()
  }
}

}  // namespace trainrun
