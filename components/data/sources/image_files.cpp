#include "components/data/sources/image_files.h"

#include "components/data/image.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace trainrun {

ImageFiles::ImageFiles(std::vector<std::string> paths, std::vector<std::vector<int64_t>> label_sets, int64_t channels)
    : paths_(std::move(paths)), label_sets_(std::move(label_sets)), channels_(channels), multilabel_(true) {
  for (const auto& set : label_sets_) labels_.push_back(set.empty() ? -1 : set.front());
}

std::vector<int64_t> ImageFiles::labels(std::size_t i) const {
  return multilabel_ ? label_sets_.at(i) : std::vector<int64_t>{labels_.at(i)};
}

Example ImageFiles::get(std::size_t i) const {
  return {decode_image(paths_.at(i), channels_), labels_.at(i), multilabel_ ? label_sets_.at(i) : std::vector<int64_t>{}};
}

Example ImageFiles::get_region(std::size_t i, const RegionPicker& pick) const {
  return {decode_image_region(paths_.at(i), channels_, pick), labels_.at(i),
          multilabel_ ? label_sets_.at(i) : std::vector<int64_t>{}};
}

std::shared_ptr<ImageFiles> ImageFiles::select(const std::vector<int64_t>& indices) const {
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  std::vector<std::vector<int64_t>> sets;
  for (int64_t i : indices) {
    paths.push_back(paths_.at(std::size_t(i)));
    labels.push_back(labels_.at(std::size_t(i)));
    if (multilabel_) sets.push_back(label_sets_.at(std::size_t(i)));
  }
  if (multilabel_) return std::make_shared<ImageFiles>(std::move(paths), std::move(sets), channels_);
  return std::make_shared<ImageFiles>(std::move(paths), std::move(labels), channels_);
}

std::pair<std::shared_ptr<const Dataset>, std::shared_ptr<const Dataset>> split_files(
    const ImageFiles& all, double val_fraction, uint64_t seed, const std::string& what) {
  int64_t n = int64_t(all.size());
  int64_t cut = int64_t((1.0 - val_fraction) * double(n));  // python's int(0.8 * n)
  if (cut <= 0 || cut >= n)
    throw DataError(fmt::format("{}: val_fraction {} of {} images leaves an empty {} split (python's int((1 - {}) * {}) = {})",
                                what, val_fraction, n, cut <= 0 ? "training" : "validation", val_fraction, n, cut));
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor perm = at::randperm(n, gen, at::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  return {all.select(std::vector<int64_t>(p, p + cut)), all.select(std::vector<int64_t>(p + cut, p + n))};
}

Schema& add_split_and_channel_keys(Schema& schema, const std::string& val_fraction_doc) {
  return schema.add("val_fraction", Type::Float, yaml("0.2"), val_fraction_doc)
      .above(0).max(1)
      .add("split_seed", Type::Int, yaml("42"), "seed of the train/validation permutation").min(0)
      .add("channels", Type::Int, yaml("3"), "3 = RGB, 1 = grayscale (PIL convert('L'))")
      .range(1, 3);
}

int64_t channels(const Config& c) {
  int64_t n = c.get<int64_t>("channels");
  if (n != 1 && n != 3) throw DataError(c.path() + ".channels: must be 1 (grayscale) or 3 (RGB), got " + std::to_string(n));
  return n;
}

bool has_image_extension(const std::string& filename) {
  std::string lower = filename;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char* ext : {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}) {
    std::string e(ext);
    if (lower.size() >= e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

}  // namespace trainrun
