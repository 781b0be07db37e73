#include "components/data/loader/loader.h"

#include "components/data/loader/map_loader.h"
#include "components/data/loader/stream_loader.h"
#include "components/data/streaming_dataset.h"

namespace trainrun {

namespace {

std::unique_ptr<BatchLoader> make_loader(std::shared_ptr<const Dataset> dataset, Compose transforms,
                                         LoaderOptions options) {
  if (const StreamingDataset* source = streaming_source(*dataset))
    return std::make_unique<StreamLoader>(std::move(dataset), *source, std::move(transforms), std::move(options));
  return std::make_unique<MapLoader>(std::move(dataset), std::move(transforms), std::move(options));
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Compose transforms, LoaderOptions options)
    : impl_(make_loader(std::move(dataset), std::move(transforms), std::move(options))) {}

DataLoader::~DataLoader() = default;

void DataLoader::start_epoch(int64_t epoch, int64_t skip_batches) { impl_->start_epoch(epoch, skip_batches); }
std::optional<Batch> DataLoader::next() { return impl_->next(); }
int64_t DataLoader::batches_per_epoch() const { return impl_->batches_per_epoch(); }
int64_t DataLoader::examples_per_epoch() const { return impl_->examples_per_epoch(); }
const Dataset& DataLoader::dataset() const { return impl_->dataset(); }
int64_t DataLoader::skipped_files() const { return impl_->skipped_files(); }
bool DataLoader::streaming() const { return impl_->streaming(); }
nlohmann::json DataLoader::state() const { return impl_->state(); }
void DataLoader::restore(const nlohmann::json& state) { impl_->restore(state); }

}  // namespace trainrun
