// A flat folder of images whose file names carry the label, as the Oxford-IIIT Pet images
// (`american_bulldog_12.jpg`): the class is the first capture group of `label_regex`, searched
// in the file name (re.search, as Accelerate's cv_example). Files it does not match are skipped
// and counted in the log; the split is the cv_example's seeded permutation (image_files.h).
// With `download: true` a missing or empty root is filled from the Oxford-IIIT Pet images.tar.gz,
// as torchvision's OxfordIIITPet(download=True) (the annotations are not fetched: the labels are
// in the file names).
#include "components/data/sources/image_files.h"
#include "components/data/sources/torchvision_download.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

std::regex compile(const std::string& pattern, const std::string& where) {
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw DataError(where + ": '" + pattern + "' is not a valid regular expression: " + e.what());
  }
  if (re.mark_count() < 1)
    throw DataError(where + ": '" + pattern + "' has no capture group; the first group is the label");
  return re;
}

bool has_files(const fs::path& root) {
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) return true;
  return false;
}

DatasetSplits make_pets_folder(const Config& c) {
  fs::path root = c.get<std::string>("root");
  if (c.get<bool>("download", false)) ensure_unpacked(oxford_pets_images_source(), root, has_files, c.path());
  if (!fs::is_directory(root)) throw MissingDataFolder("root", root.string() + ": no such folder");
  std::string pattern = c.get<std::string>("label_regex");
  std::regex re = compile(pattern, c.path() + ".label_regex");

  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());

  std::vector<std::string> paths, labels;
  int64_t skipped = 0;
  for (const auto& name : names) {
    std::smatch m;
    if (!std::regex_search(name, m, re)) {
      ++skipped;
      continue;
    }
    paths.push_back((root / name).string());
    labels.push_back(m[1].str());
  }
  if (skipped) spdlog::warn("pets_folder: skipped {} files that do not match label_regex", skipped);
  if (paths.empty())
    throw DataError(root.string() + ": no file matches label_regex '" + pattern + "' (" + std::to_string(names.size()) +
                    " files looked at)");

  DatasetSplits out;
  std::map<std::string, int64_t> index;
  for (const auto& l : labels) index.emplace(l, 0);
  for (auto& [name, i] : index) {
    i = int64_t(out.classes.size());
    out.classes.push_back(name);
  }
  std::vector<int64_t> ids;
  for (const auto& l : labels) ids.push_back(index.at(l));
  ImageFiles all(std::move(paths), std::move(ids), channels(c));
  std::tie(out.train, out.eval) =
      split_files(all, c.get<double>("val_fraction"), c.get<uint64_t>("split_seed"), root.string());
  out.eval_split_name = "validation";
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "pets_folder",
                  "flat image folder, label = first capture group of label_regex on the file name (Oxford-IIIT Pet)",
                  add_split_and_channel_keys(
                      Schema()
                          .required("root", Type::Path, "folder holding the images (not searched recursively)")
                          .add("label_regex", Type::String, YAML::Node("^(.*)_\\d+\\.jpg$"),
                               "regex searched in each file name; group 1 = class; other files are skipped")
                          .add("download", Type::Bool, yaml("false"),
                               "when root is missing or empty, fetch the Oxford-IIIT Pet images.tar.gz into its "
                               "parent (torchvision's URL and MD5) and unpack it there (root must be named "
                               "images); TRAINRUN_DATASETS_MIRROR=<url> fetches <url>/images.tar.gz instead, "
                               "TRAINRUN_DATASETS_MD5=images.tar.gz=<md5> replaces the checksum"),
                      "share held out for evaluation: torch.randperm(n, seed) over the sorted files, "
                      "last share = validation"),
                  make_pets_folder);

}  // namespace trainrun
