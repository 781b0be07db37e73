#include "components/data/sources/torchvision_download.h"

#include "support/archive.h"
#include "support/download.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

namespace trainrun {

namespace fs = std::filesystem;

// The tables are torchvision's (torchvision/datasets/mnist.py, stl10.py, oxford_iiit_pet.py).
const DatasetSource& mnist_source() {
  static const DatasetSource s{"MNIST",
                               {"http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"},
                               {{"train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"},
                                {"train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"},
                                {"t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"},
                                {"t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"}},
                               ""};
  return s;
}

const DatasetSource& fashion_mnist_source() {
  static const DatasetSource s{"FashionMNIST",
                               {"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"},
                               {{"train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"},
                                {"train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"},
                                {"t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"},
                                {"t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"}},
                               ""};
  return s;
}

const DatasetSource& stl10_source() {
  static const DatasetSource s{"STL-10",
                               {"http://ai.stanford.edu/~acoates/stl10/"},
                               {{"stl10_binary.tar.gz", "91f7769df0f17e558f3565bffb0c7dfb"}},
                               "stl10_binary"};
  return s;
}

const DatasetSource& oxford_pets_images_source() {
  static const DatasetSource s{"Oxford-IIIT Pet",
                               {"https://www.robots.ox.ac.uk/~vgg/data/pets/data/"},
                               {{"images.tar.gz", "5c4f3ee8e5d25df40f4fd59a7f44e54c"}},
                               "images"};
  return s;
}

namespace {

bool deferred = false;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::vector<std::string> mirrors(const DatasetSource& source) {
  const char* mirror = env("TRAINRUN_DATASETS_MIRROR");
  if (!mirror) return source.mirrors;
  std::string base = mirror;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return {base + "/"};
}

bool is_md5(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

// TRAINRUN_DATASETS_MD5, parsed; a malformed entry is an error rather than a check skipped.
std::map<std::string, std::string> md5_overrides() {
  std::map<std::string, std::string> out;
  const char* text = env("TRAINRUN_DATASETS_MD5");
  if (!text) return out;
  std::string all = text;
  for (std::size_t start = 0; start <= all.size();) {
    std::size_t end = std::min(all.find(',', start), all.size());
    std::string item = all.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || !is_md5(item.substr(eq + 1)))
      throw DataError("TRAINRUN_DATASETS_MD5: '" + item + "' is not FILE=MD5 (32 hex digits)");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

std::string md5_of(const DatasetFile& file) {
  auto overrides = md5_overrides();
  auto it = overrides.find(file.name);
  return it == overrides.end() ? file.md5 : it->second;
}

void make_folder(const fs::path& folder, const std::string& where) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw DataError(where + ": cannot create " + folder.string() + ": " + ec.message());
}

bool has_entries(const fs::path& folder) {
  std::error_code ec;
  return fs::is_directory(folder, ec) && !fs::is_empty(folder, ec);
}

}  // namespace

void defer_dataset_downloads(bool defer) { deferred = defer; }

void fetch_dataset_file(const DatasetSource& source, std::size_t index, const fs::path& folder,
                        const std::string& where) {
  const DatasetFile& file = source.files.at(index);
  std::vector<std::string> urls;
  for (const auto& m : mirrors(source)) urls.push_back(m + file.name);
  if (deferred && !fs::exists(folder / file.name))
    throw DownloadDeferred(where + ": " + source.name + " " + file.name + " would be downloaded from " + urls.front() +
                           " into " + folder.string());
  std::string hint = source.folder.empty()
                         ? "or download " + urls.front() + " yourself and put it in " + folder.string()
                         : "or download " + urls.front() + " yourself and unpack it into " + folder.string();
  make_folder(folder, where);
  fs::path destination = folder / file.name;
  std::string md5 = md5_of(file);
  // As torchvision's MNIST.download: the next mirror when one fails; the error says why each did,
  // then (once, whatever the failure) how to do without.
  std::string errors;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    DownloadRequest request;
    request.url = urls[i];
    request.destination = destination;
    request.md5 = md5;
    request.what = source.name + " " + file.name;
    try {
      download(request);
      return;
    } catch (const DownloadError& e) {
      errors += (errors.empty() ? "" : "; then ") + std::string(e.what());
      if (i + 1 < urls.size()) spdlog::warn("{}: {} (trying the next mirror)", where, e.what());
    }
  }
  throw DataError(where + ": " + errors + "; " + hint);
}

void ensure_unpacked(const DatasetSource& source, const fs::path& given_root,
                     const std::function<bool(const fs::path&)>& ready, const std::string& where) {
  if (ready(given_root)) return;
  fs::path root = given_root.lexically_normal();
  if (!root.has_filename()) root = root.parent_path();
  if (root.filename() != source.folder)
    throw DataError(where + ".root: with download: true the folder must be named " + source.folder +
                    " (the archive's top folder), not " + given_root.string());
  fs::path parent = root.has_parent_path() ? root.parent_path() : fs::path(".");
  if (deferred && !fs::exists(parent / source.files.front().name))
    throw DownloadDeferred(where + ": " + source.name + " " + source.files.front().name + " would be downloaded from " +
                           mirrors(source).front() + source.files.front().name + " and unpacked into " + root.string());
  make_folder(parent, where);

  std::optional<FileLock> lock;
  try {
    lock.emplace(parent / ("." + source.folder + ".extract.lock"), where,
                 "Waiting for another process to unpack " + source.name);
  } catch (const DownloadError& e) {
    throw DataError(e.what());
  }
  if (ready(root)) return;  // another process of this node unpacked it while we waited
  if (has_entries(root))
    throw DataError(where + ": " + root.string() + " holds files but not the whole " + source.name +
                    " dataset; download: true fills only a missing or empty folder (remove it to download again)");
  fetch_dataset_file(source, 0, parent, where);
  fs::path archive = parent / source.files.front().name;
  spdlog::info("{}: unpacking {}", where, archive.string());
  try {
    extract_archive(archive, parent);
  } catch (const ArchiveError& e) {
    throw DataError(where + ": cannot unpack " + source.name + ": " + e.what() + "; or download " +
                    mirrors(source).front() + source.files.front().name + " yourself and unpack it into " +
                    parent.string());
  }
  if (!ready(root))
    throw DataError(where + ": " + archive.string() + " did not unpack into a complete " + root.string() +
                    " (remove both to download again)");
}

}  // namespace trainrun
