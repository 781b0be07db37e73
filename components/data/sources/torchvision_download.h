// `download: true` on mnist, stl10 and pets_folder, as torchvision's download=True: the files,
// mirrors and MD5s torchvision's MNIST, FashionMNIST, STL10 and OxfordIIITPet fetch, fetched
// only when missing, checked before use (support/download.h), and archives unpacked so that the
// recipe's `root` is what the dataset reads.
//
// TRAINRUN_DATASETS_MIRROR=<base URL> replaces every mirror list: a file is fetched from
// <base URL>/<file name> (an in-house mirror; the tests' loopback server).
// TRAINRUN_DATASETS_MD5=<file>=<md5>[,<file>=<md5>...] replaces the table's checksum of the files
// named, for a mirror that repackages them.
#pragma once

#include "components/data/dataset.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace trainrun {

// `trainrun check` fetches nothing unless asked (--download): while downloads are deferred, a
// dataset that would be fetched throws DownloadDeferred saying what, from where and into where.
struct DownloadDeferred : DataError {
  using DataError::DataError;
};
void defer_dataset_downloads(bool defer);

struct DatasetFile {
  std::string name;  // as on the mirrors: "train-images-idx3-ubyte.gz"
  std::string md5;   // torchvision's checksum
};

// Where a dataset comes from: the mirrors tried in order for each file, as torchvision's
// MNIST.download does.
struct DatasetSource {
  std::string name;                  // "MNIST", for messages
  std::vector<std::string> mirrors;  // base URLs ending in '/'
  std::vector<DatasetFile> files;
  std::string folder;                // an archive's top folder ("stl10_binary"); empty for plain files
};

const DatasetSource& mnist_source();          // torchvision MNIST
const DatasetSource& fashion_mnist_source();  // torchvision FashionMNIST
const DatasetSource& stl10_source();          // torchvision STL10: stl10_binary.tar.gz
const DatasetSource& oxford_pets_images_source();  // torchvision OxfordIIITPet: images.tar.gz only

// Fetches source.files[index] into `folder` (as <folder>/<file name>) from the first mirror that
// delivers it, unless it is there. `where` names the recipe entry in errors ("data.dataset").
// Throws DataError: what, from where, why, and how to fetch it by hand.
void fetch_dataset_file(const DatasetSource& source, std::size_t index, const std::filesystem::path& folder,
                        const std::string& where);

// For a dataset shipped as one archive whose top folder is `root`: unless ready(root), fetches
// the archive into root's parent and unpacks it there, one process per node at a time (an flock
// on <parent>/.<folder>.extract.lock, ready(root) asked again once held). The archive is kept,
// as torchvision keeps it. Throws DataError when root is not named source.folder, when root
// holds files but is not ready (only a missing or empty folder is filled), when the fetch or the
// unpacking fails, or when the archive did not make root ready.
void ensure_unpacked(const DatasetSource& source, const std::filesystem::path& root,
                     const std::function<bool(const std::filesystem::path&)>& ready, const std::string& where);

}  // namespace trainrun
