// MNIST and Fashion-MNIST: the four IDX files (raw or .gz) in one folder, as torchvision's
// MNIST/FashionMNIST read them. The test split is the eval split. With `download: true` the
// missing files are fetched as torchvision's download=True fetches them (components/data/sources/torchvision_download.h)
// and kept as .gz, which read_idx reads.
#include "components/data/dataset.h"
#include "components/data/sources/idx.h"
#include "components/data/sources/torchvision_download.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class MnistSplit : public Dataset {
 public:
  MnistSplit(at::Tensor images, at::Tensor labels) : images_(std::move(images)), labels_(std::move(labels)) {}
  std::size_t size() const override { return std::size_t(labels_.size(0)); }
  Example get(std::size_t i) const override {
    return {images_[int64_t(i)].unsqueeze(-1), labels_.data_ptr<int64_t>()[i], {}};
  }
  int64_t label(std::size_t i) const override { return labels_.data_ptr<int64_t>()[i]; }

 private:
  at::Tensor images_;  // N x 28 x 28 uint8
  at::Tensor labels_;  // N int64
};

std::optional<fs::path> look_for(const fs::path& root, const std::string& stem) {
  for (const fs::path& dir : {root, root / "raw"})
    for (const char* ext : {"", ".gz"})
      if (fs::exists(dir / (stem + ext))) return dir / (stem + ext);
  return std::nullopt;
}

std::string find_file(const fs::path& root, const std::string& stem) {
  if (auto found = look_for(root, stem)) return found->string();
  throw DataError((root / stem).string() + "[.gz]: no such file (an MNIST folder holds " + stem +
                  " and its three siblings)");
}

std::shared_ptr<const Dataset> load_mnist_split(const fs::path& root, const std::string& prefix,
                                          int64_t num_classes) {
  std::string images_path = find_file(root, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte");
  at::Tensor images = read_idx(images_path);
  at::Tensor labels = read_idx(labels_path);
  if (images.dim() != 3) throw DataError(images_path + ": expected 3 dimensions (N, H, W)");
  if (labels.dim() != 1) throw DataError(labels_path + ": expected 1 dimension (N)");
  if (images.size(0) != labels.size(0))
    throw DataError(labels_path + ": holds " + std::to_string(labels.size(0)) + " labels but " + images_path +
                    " holds " + std::to_string(images.size(0)) + " images");
  if (labels.numel() && labels.max().item<int64_t>() >= num_classes)
    throw DataError(labels_path + ": label " + std::to_string(labels.max().item<int64_t>()) +
                    " is out of range for " + std::to_string(num_classes) + " classes");
  return std::make_shared<MnistSplit>(images, labels.to(at::kLong));
}

// `source: auto` picks Fashion-MNIST when the root's path says so (data/fashion-mnist,
// /usr/share/datasets/fashion-mnist), MNIST otherwise.
const DatasetSource& pick_source(const std::string& source, const fs::path& root) {
  if (source == "mnist") return mnist_source();
  if (source == "fashion_mnist") return fashion_mnist_source();
  std::string path = root.string();
  std::transform(path.begin(), path.end(), path.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return path.find("fashion") != std::string::npos ? fashion_mnist_source() : mnist_source();
}

// Fetches the IDX files missing from root (raw or .gz, in root or root/raw) into root.
void download_missing(const Config& c, const fs::path& root) {
  // The source's name held in a variable: GCC 14 takes a reference returned from a call with a
  // temporary argument for one into that temporary (-Wdangling-reference).
  const std::string asked = c.get<std::string>("source", "auto");
  const DatasetSource& source = pick_source(asked, root);
  for (std::size_t i = 0; i < source.files.size(); ++i)
    if (!look_for(root, fs::path(source.files[i].name).stem().string()))
      fetch_dataset_file(source, i, root, c.path());
}

DatasetSplits make_mnist(const Config& c) {
  fs::path root = c.get<std::string>("root");
  if (c.get<bool>("download", false)) download_missing(c, root);
  if (!fs::is_directory(root)) throw MissingDataFolder("root", root.string() + ": no such folder");
  DatasetSplits out;
  if (c.is_null("classes")) {
    for (int d = 0; d < 10; ++d) out.classes.push_back(std::to_string(d));
  } else {
    out.classes = c.get<std::vector<std::string>>("classes");
  }
  int64_t n = int64_t(out.classes.size());
  out.train = load_mnist_split(root, "train", n);
  out.eval = load_mnist_split(root, "t10k", n);
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "mnist",
                  "MNIST-format IDX files (train-*/t10k-*, raw or .gz); Fashion-MNIST too. Eval split = test",
                  Schema()
                      .required("root", Type::Path, "folder with train-images-idx3-ubyte[.gz] and siblings")
                      .add("classes", Type::StringList, YAML::Node(),
                           "class names in label order; default the digits 0-9")
                      .add("download", Type::Bool, yaml("false"),
                           "fetch the missing files into root as torchvision's download=True does (its mirrors, "
                           "tried in order, and MD5s; kept as .gz); TRAINRUN_DATASETS_MIRROR=<url> fetches "
                           "<url>/<file> instead, TRAINRUN_DATASETS_MD5=<file>=<md5>,... replaces checksums")
                      .add("source", Type::String, YAML::Node("auto"),
                           "what download fetches: mnist, fashion_mnist, or auto = fashion_mnist when root's "
                           "path contains 'fashion' (any case), else mnist")
                      .choices({"auto", "mnist", "fashion_mnist"}),
                  make_mnist);

}  // namespace trainrun
