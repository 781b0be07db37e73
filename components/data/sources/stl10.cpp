// STL-10, the official binary release (stl10_binary/): train_X.bin / test_X.bin hold 96x96x3
// uint8 images, each as 3 planes (R, G, B), each plane column-major (as torchvision's STL10
// reads them: reshape(-1, 3, 96, 96) then swap the last two axes); train_y.bin / test_y.bin one
// byte per image, 1..10. class_names.txt names the classes when present; unlabeled_X.bin is not
// used for classification. The image files are memory-mapped, not read: an image is copied
// out (and transposed to H x W x C) when the loader asks for it. With `download: true` a missing
// or empty root is filled from stl10_binary.tar.gz, as torchvision's STL10(download=True).
#include "components/data/dataset.h"
#include "components/data/sources/torchvision_download.h"

#include <ATen/ATen.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSide = 96, kImageBytes = 3 * kSide * kSide;

// A read-only mapping of a whole file, viewed as a uint8 tensor that unmaps when the last
// view of it goes.
at::Tensor map_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw DataError(path.string() + ": no such file (an STL-10 folder holds train_X.bin, train_y.bin, test_X.bin, test_y.bin)");
  struct stat st {};
  ::fstat(fd, &st);
  auto size = std::size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return at::empty({0}, at::kByte);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw DataError(path.string() + ": cannot map the file");
  return at::from_blob(p, {int64_t(size)}, [size](void* q) { ::munmap(q, size); }, at::TensorOptions(at::kByte));
}

class Stl10Split : public Dataset {
 public:
  Stl10Split(at::Tensor images, at::Tensor labels) : images_(std::move(images)), labels_(std::move(labels)) {}
  std::size_t size() const override { return std::size_t(labels_.size(0)); }
  Example get(std::size_t i) const override {
    // [c][x][y] on disk -> [y][x][c]
    return {images_[int64_t(i)].permute({2, 1, 0}).contiguous(), label(i), {}};
  }
  int64_t label(std::size_t i) const override { return labels_.data_ptr<int64_t>()[i]; }

 private:
  at::Tensor images_;  // N x 3 x 96 x 96 uint8, planes column-major (mapped)
  at::Tensor labels_;  // N int64, 0..9
};

std::shared_ptr<const Dataset> load_stl10_split(const fs::path& root, const std::string& split, int64_t num_classes) {
  fs::path x_path = root / (split + "_X.bin"), y_path = root / (split + "_y.bin");
  at::Tensor x = map_file(x_path);
  if (x.numel() % kImageBytes != 0)
    throw DataError(x_path.string() + ": " + std::to_string(x.numel()) + " bytes is not a whole number of 96x96x3 images (" +
                    std::to_string(kImageBytes) + " bytes each)");
  int64_t n = x.numel() / kImageBytes;
  at::Tensor y = map_file(y_path).to(at::kLong);  // a copy: one byte per label
  if (y.numel() != n)
    throw DataError(y_path.string() + ": holds " + std::to_string(y.numel()) + " labels but " + x_path.string() +
                    " holds " + std::to_string(n) + " images");
  if (n > 0 && (y.min().item<int64_t>() < 1 || y.max().item<int64_t>() > num_classes))
    throw DataError(y_path.string() + ": labels must be 1.." + std::to_string(num_classes) + ", found " +
                    std::to_string(y.min().item<int64_t>()) + ".." + std::to_string(y.max().item<int64_t>()));
  return std::make_shared<Stl10Split>(x.view({n, 3, kSide, kSide}), y - 1);
}

std::vector<std::string> class_names(const fs::path& root) {
  std::ifstream in(root / "class_names.txt");
  if (!in) return {"airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"};
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.empty()) throw DataError((root / "class_names.txt").string() + ": no class names");
  return names;
}

// What the dataset reads (class_names.txt is optional, unlabeled_X.bin unused).
bool has_splits(const fs::path& root) {
  for (const char* name : {"train_X.bin", "train_y.bin", "test_X.bin", "test_y.bin"})
    if (!fs::is_regular_file(root / name)) return false;
  return true;
}

DatasetSplits make_stl10(const Config& c) {
  fs::path root = c.get<std::string>("root");
  if (c.get<bool>("download", false)) ensure_unpacked(stl10_source(), root, has_splits, c.path());
  if (!fs::is_directory(root)) throw MissingDataFolder("root", root.string() + ": no such folder");
  DatasetSplits out;
  out.classes = class_names(root);
  out.train = load_stl10_split(root, "train", int64_t(out.classes.size()));
  out.eval = load_stl10_split(root, "test", int64_t(out.classes.size()));
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "stl10",
                  "STL-10 binary release (train_X.bin/train_y.bin/test_X.bin/test_y.bin, 96x96 RGB). Eval split = test",
                  Schema()
                      .required("root", Type::Path, "the stl10_binary folder")
                      .add("download", Type::Bool, yaml("false"),
                           "when root is missing or empty, fetch stl10_binary.tar.gz into its parent (torchvision's "
                           "URL and MD5) and unpack it there (root must be named stl10_binary); "
                           "TRAINRUN_DATASETS_MIRROR=<url> fetches <url>/stl10_binary.tar.gz instead, "
                           "TRAINRUN_DATASETS_MD5=stl10_binary.tar.gz=<md5> replaces the checksum"),
                  make_stl10);

}  // namespace trainrun
