// A dataset read by index, as torch.utils.data's map-style loading: the sampler's order of the
// epoch (shard_indices: shuffled with seed + epoch, split over the ranks), cut into batches.
#pragma once

#include "components/data/loader/batch_loader.h"

namespace trainrun {

class MapLoader final : public BatchLoader {
 public:
  using BatchLoader::BatchLoader;
  ~MapLoader() override { wait_pending(); }

  void start_epoch(int64_t epoch, int64_t skip_batches) override;
  int64_t examples_per_epoch() const override;
  bool streaming() const override { return false; }

 private:
  void fill() override;
  Example read(int64_t index, const wds::RawSample* raw, const RegionPicker* pick) const override;

  std::vector<int64_t> order_;
};

}  // namespace trainrun
