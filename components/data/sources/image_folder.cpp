// torchvision's ImageFolder: one sub-folder per class (classes = sorted sub-folder names), the
// files under each (recursively) with an image extension (IMG_EXTENSIONS, case-insensitive),
// sorted. The eval split is a separate folder of the same layout (`val_root`, as ImageNet's
// train/ and val/), or else a seeded `val_fraction` of `root` (image_files.h).
#include "components/data/sources/image_files.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> class_folders(const fs::path& root) {
  if (!fs::is_directory(root)) throw MissingDataFolder("root", root.string() + ": no such folder");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw DataError(root.string() + ": no class sub-folders (image_folder expects root/CLASS/IMAGE)");
  return names;
}

// Every image of every class folder under `root`, labelled by `classes`' order.
ImageFiles scan(const fs::path& root, const std::vector<std::string>& classes, int64_t channels) {
  std::map<std::string, int64_t> index;
  for (std::size_t i = 0; i < classes.size(); ++i) index[classes[i]] = int64_t(i);
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  for (const auto& name : class_folders(root)) {
    auto it = index.find(name);
    if (it == index.end())
      throw DataError((root / name).string() + ": class '" + name + "' is not one of the training classes");
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / name, fs::directory_options::follow_directory_symlink))
      if (entry.is_regular_file() && has_image_extension(entry.path().filename().string()))
        files.push_back(entry.path().string());
    if (files.empty()) throw DataError((root / name).string() + ": no image files in class folder");
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      paths.push_back(std::move(f));
      labels.push_back(it->second);
    }
  }
  return ImageFiles(std::move(paths), std::move(labels), channels);
}

DatasetSplits make_image_folder(const Config& c) {
  fs::path root = c.get<std::string>("root");
  DatasetSplits out;
  out.classes = class_folders(root);
  ImageFiles all = scan(root, out.classes, channels(c));
  out.eval_split_name = "validation";
  if (!c.is_null("val_root")) {
    out.train = std::make_shared<ImageFiles>(std::move(all));
    out.eval = std::make_shared<ImageFiles>(scan(c.get<std::string>("val_root"), out.classes, channels(c)));
    return out;
  }
  std::tie(out.train, out.eval) =
      split_files(all, c.get<double>("val_fraction"), c.get<uint64_t>("split_seed"), root.string());
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "image_folder",
                  "one sub-folder of images per class (torchvision ImageFolder); eval = val_root or a seeded share",
                  add_split_and_channel_keys(
                      Schema()
                          .required("root", Type::Path, "folder of class folders: root/CLASS/IMAGE")
                          .add("val_root", Type::Path, YAML::Node(), "evaluation folder of the same layout; null = split root")
                          .nullable(),
                      "without val_root: share held out for evaluation (torch.randperm(n, split_seed))"),
                  make_image_folder);

}  // namespace trainrun
