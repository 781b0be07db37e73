// What pets_folder, image_folder and image_csv build: a list of image files with labels (one per
// image, or a set per image for a multi-label image_csv). Paths, not pixels, are held; an image is
// decoded when the loader asks for it.
#pragma once

#include "components/data/dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

class ImageFiles : public Dataset {
 public:
  ImageFiles(std::vector<std::string> paths, std::vector<int64_t> labels, int64_t channels)
      : paths_(std::move(paths)), labels_(std::move(labels)), channels_(channels) {}
  // Multi-label: each image's set of classes.
  ImageFiles(std::vector<std::string> paths, std::vector<std::vector<int64_t>> label_sets, int64_t channels);
  std::size_t size() const override { return paths_.size(); }
  Example get(std::size_t i) const override;
  Example get_region(std::size_t i, const RegionPicker& pick) const override;
  int64_t label(std::size_t i) const override { return labels_.at(i); }
  bool multilabel() const override { return multilabel_; }
  std::vector<int64_t> labels(std::size_t i) const override;
  const std::string& path(std::size_t i) const { return paths_.at(i); }
  std::optional<std::string> source_file(std::size_t i) const override { return paths_.at(i); }

  // The examples at `indices`, in that order.
  std::shared_ptr<ImageFiles> select(const std::vector<int64_t>& indices) const;

 private:
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;                  // the first of each set when multilabel_ (-1: none)
  std::vector<std::vector<int64_t>> label_sets_;  // multilabel_ only
  int64_t channels_;
  bool multilabel_ = false;
};

// A seeded train/eval split as the Accelerate cv_example makes it: perm =
// torch.randperm(n, generator=torch.Generator().manual_seed(seed)); the first
// int((1 - val_fraction) * n) of perm are the training examples, the rest the eval examples,
// both in perm order. `what` names the dataset in errors (an empty side is an error).
std::pair<std::shared_ptr<const Dataset>, std::shared_ptr<const Dataset>> split_files(
    const ImageFiles& all, double val_fraction, uint64_t seed, const std::string& what);

// The keys pets_folder and image_folder share: `val_fraction` (documented by `val_fraction_doc`),
// `split_seed` and `channels`, added to `schema`.
Schema& add_split_and_channel_keys(Schema& schema, const std::string& val_fraction_doc);

// The `channels` key of a folder dataset: 1 or 3.
int64_t channels(const Config& c);

// torchvision's IMG_EXTENSIONS, compared case-insensitively as ImageFolder does.
bool has_image_extension(const std::string& filename);

}  // namespace trainrun
