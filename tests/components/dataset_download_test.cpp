// `download: true` on mnist, stl10 and pets_folder against a mirror on loopback
// (tests/py/mirror_server.py, TRAINRUN_DATASETS_MIRROR): fetched once, checked, unpacked so the
// dataset builds; a second run asks for nothing; a wrong checksum, a mirror that is down and an
// archive entry that points outside the folder are one-line errors that leave nothing behind.
// The fixtures are small fakes written here, so their checksums come in TRAINRUN_DATASETS_MD5.
#include "components/data/dataset.h"
#include "components/data/image.h"
#include "support/archive.h"
#include "components/make_dataset.h"
#include "test_util.h"

#include <torch/torch.h>

#include <csignal>
#include <thread>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using test::make_dataset;

std::string md5sum(const std::string& path) {
  auto r = test::run("md5sum " + path);
  return r.out.substr(0, 32);
}

std::string bytes(std::size_t n, int seed) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(char((i * 31 + std::size_t(seed) * 17) % 251));
  return s;
}

bool any_name_contains(const fs::path& dir, const std::string& part) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(part) != std::string::npos) return true;
  return false;
}

class DatasetDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(mirror_dir());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl(test::kPython, test::kPython, test::source("tests/py/mirror_server.py").c_str(), mirror_dir().c_str(),
              (dir / "port").c_str(), (dir / "requests.log").c_str(), delay(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !fs::exists(dir / "port"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(dir / "port")) << "the mirror server did not start";
    url_ = "http://127.0.0.1:" + test::read_file(dir / "port");
  }
  void TearDown() override {
    ::unsetenv("TRAINRUN_DATASETS_MIRROR");
    ::unsetenv("TRAINRUN_DATASETS_MD5");
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Seconds the mirror holds each GET.
  virtual const char* delay() const { return "0"; }
  std::string mirror_dir() const { return dir / "mirror"; }
  std::string served(const std::string& name) const { return mirror_dir() + "/" + name; }
  // name=md5 for TRAINRUN_DATASETS_MD5.
  std::string checksum(const std::string& name) const { return name + "=" + md5sum(served(name)); }

  // The GET requests the mirror answered so far.
  std::vector<std::string> gets() const {
    std::vector<std::string> out;
    std::istringstream in(test::read_file(dir / "requests.log"));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("GET ", 0) == 0) out.push_back(line.substr(4, line.find(' ', 4) - 4));
    return out;
  }

  // For the processes the test starts, and for this one.
  std::string env(const std::string& md5s) const {
    return "TRAINRUN_DATASETS_MIRROR=" + url_ + " TRAINRUN_DATASETS_MD5=" + md5s + " ";
  }
  void set_env(const std::string& md5s) const {
    ::setenv("TRAINRUN_DATASETS_MIRROR", url_.c_str(), 1);
    ::setenv("TRAINRUN_DATASETS_MD5", md5s.c_str(), 1);
  }

  // MNIST's four files, gzip'd: 20 train and 10 test images of 28x28, labels i % 10.
  std::string serve_mnist() {
    for (auto [split, n] : {std::pair<std::string, uint32_t>{"train", 20}, {"t10k", 10}}) {
      std::string labels;
      for (uint32_t i = 0; i < n; ++i) labels.push_back(char(i % 10));
      test::write_file(dir / ("mnist-src/" + split + "-images-idx3-ubyte"), test::idx_file({n, 28, 28}, bytes(std::size_t(n) * 784, int(n))));
      test::write_file(dir / ("mnist-src/" + split + "-labels-idx1-ubyte"), test::idx_file({n}, labels));
    }
    EXPECT_EQ(test::run("gzip -n " + (dir / "mnist-src") + "/*-ubyte && mv " + (dir / "mnist-src") + "/*.gz " + mirror_dir()).code, 0);
    std::string md5s;
    for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                          "t10k-labels-idx1-ubyte.gz"})
      md5s += (md5s.empty() ? "" : ",") + checksum(f);
    return md5s;
  }

  // stl10_binary.tar.gz: 3 train and 2 test images, class_names.txt.
  std::string serve_stl10() {
    std::string src = dir / "stl-src/stl10_binary";
    test::write_file(src + "/train_X.bin", bytes(3 * 27648, 1));
    test::write_file(src + "/train_y.bin", std::string{1, 10, 4});
    test::write_file(src + "/test_X.bin", bytes(2 * 27648, 2));
    test::write_file(src + "/test_y.bin", std::string{2, 2});
    test::write_file(src + "/class_names.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
    EXPECT_EQ(test::run("tar -C " + (dir / "stl-src") + " -czf " + served("stl10_binary.tar.gz") + " stl10_binary").code, 0);
    return checksum("stl10_binary.tar.gz");
  }

  // images.tar.gz: images/<Breed>_<n>.jpg, 5 Abyssinian and 5 Bengal, as the Pet archive.
  std::string serve_pets() {
    fs::create_directories(dir / "pets-src/images");
    for (int i = 1; i <= 5; ++i)
      for (const char* breed : {"Abyssinian", "Bengal"})
        write_image(dir / ("pets-src/images/" + std::string(breed) + "_" + std::to_string(i) + ".jpg"),
                    torch::full({12, 16, 3}, 40 * i, torch::kUInt8));
    EXPECT_EQ(test::run("tar -C " + (dir / "pets-src") + " -czf " + served("images.tar.gz") + " images").code, 0);
    return checksum("images.tar.gz");
  }

  std::string pets_params(const std::string& root) const {
    return "{root: " + root + ", download: true, label_regex: '^(.*)_\\d+\\.jpg$', val_fraction: 0.2, split_seed: 42, channels: 3}";
  }

  test::TempDir dir;
  std::string url_;
  pid_t pid_ = -1;
};

// The recipe `trainrun check` runs: the quickstart's basicnet on a downloaded MNIST.
std::string check_mnist(const std::string& root, const std::string& out) {
  return test::trainrun("check --download " + test::source("recipes/quickstart.yaml") + " 'data.dataset={name: mnist, root: " + root +
                        ", download: true}' world.nproc_per_node=1 data.batch_size=4 data.eval_batch_size=5 output.dir=" +
                        out);
}

TEST_F(DatasetDownload, MnistFetchesTheFourFilesOnceAndTrainrunCheckBuildsIt) {
  std::string md5s = serve_mnist();
  // Without --download, check fetches nothing and says what a run would.
  std::string plain = check_mnist(dir / "data/mnist", dir / "run");
  plain.replace(plain.find("check --download "), 17, "check ");
  auto planned = test::run(env(md5s) + plain);
  ASSERT_EQ(planned.code, 0) << planned.err;
  EXPECT_NE(planned.out.find("note: data.dataset: MNIST train-images-idx3-ubyte.gz would be downloaded from " + url_ +
                             "/train-images-idx3-ubyte.gz into " + (dir / "data/mnist")),
            std::string::npos) << planned.out;
  EXPECT_TRUE(gets().empty());
  auto first = test::run(env(md5s) + check_mnist(dir / "data/mnist", dir / "run"));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("data: mnist, 10 classes, 20 train / 10 test examples"), std::string::npos) << first.out;
  std::vector<std::string> expected{"/train-images-idx3-ubyte.gz", "/train-labels-idx1-ubyte.gz",
                                    "/t10k-images-idx3-ubyte.gz", "/t10k-labels-idx1-ubyte.gz"};
  EXPECT_EQ(gets(), expected);
  for (const auto& f : expected)  // kept as fetched, .gz (read_idx reads it)
    EXPECT_EQ(test::read_file(dir / ("data/mnist" + f)), test::read_file(mirror_dir() + f)) << f;
  EXPECT_FALSE(any_name_contains(dir / "data", ".incomplete"));

  auto second = test::run(env(md5s) + check_mnist(dir / "data/mnist", dir / "run"));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(gets().size(), 4u) << "the second run asked the mirror again";
}

TEST_F(DatasetDownload, OnlyTheMissingMnistFilesAreFetched) {
  std::string md5s = serve_mnist();
  fs::create_directories(dir / "data/mnist/raw");
  fs::copy(served("train-labels-idx1-ubyte.gz"), dir / "data/mnist/train-labels-idx1-ubyte.gz");
  fs::copy(served("train-images-idx3-ubyte.gz"), dir / "data/mnist/raw/train-images-idx3-ubyte.gz");
  ASSERT_EQ(test::run("gunzip " + (dir / "data/mnist/raw/train-images-idx3-ubyte.gz")).code, 0);  // raw, as torchvision leaves it
  set_env(md5s);
  auto d = make_dataset("mnist", "{root: " + (dir / "data/mnist") + ", download: true}");
  EXPECT_EQ(d.train->size(), 20u);
  EXPECT_EQ(d.eval->label(7), 7);
  EXPECT_EQ(gets(), (std::vector<std::string>{"/t10k-images-idx3-ubyte.gz", "/t10k-labels-idx1-ubyte.gz"}));
}

// torchvision's checksums stay in force: the fake files fail them, and nothing is left behind.
// `source: auto` takes Fashion-MNIST's table for a folder named like it.
TEST_F(DatasetDownload, AWrongChecksumIsOneLineExit2AndLeavesNoFile) {
  serve_mnist();
  for (auto [root, md5] : {std::pair<std::string, std::string>{"data/mnist", "f68b3c2dcbeaaa9fbdd348bbdeb94873"},
                           {"data/Fashion-MNIST", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"}}) {
    auto r = test::run("TRAINRUN_DATASETS_MIRROR=" + url_ + " " + check_mnist(dir / root, dir / "run"));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("data.dataset: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(url_ + "/train-images-idx3-ubyte.gz"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("md5 checksum mismatch: expected " + md5), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / (root + "/train-images-idx3-ubyte.gz")));
    EXPECT_FALSE(any_name_contains(dir / root, ".incomplete"));
  }
  auto r = test::run("TRAINRUN_DATASETS_MIRROR=" + url_ + " " + check_mnist(dir / "data/mnist", dir / "run") +
                     " 'data.dataset.source=fashion_mnist'");
  EXPECT_NE(r.err.find("expected 8d4fb7e6c68d591d4c3dfef9ec88bf0d"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(DatasetDownload, AMirrorThatIsDownIsOneLineNamingTheUrlAndTheWayOffline) {
  std::string down = "http://127.0.0.1:" + std::to_string(test::free_port());
  auto r = test::run("TRAINRUN_DATASETS_MIRROR=" + down + "/ " + check_mnist(dir / "data/mnist", dir / "run"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("cannot download " + down + "/train-images-idx3-ubyte.gz"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; or download " + down + "/train-images-idx3-ubyte.gz yourself and put it in " +
                       (dir / "data/mnist")),
            std::string::npos)
      << r.err;
}

TEST_F(DatasetDownload, Stl10ArchiveIsFetchedIntoTheParentAndUnpackedOnce) {
  set_env(serve_stl10());
  auto d = make_dataset("stl10", "{root: " + (dir / "data/stl10_binary") + ", download: true}");
  EXPECT_EQ(d.train->size(), 3u);
  EXPECT_EQ(d.eval->size(), 2u);
  EXPECT_EQ(d.train->label(1), 9);
  EXPECT_EQ(d.classes.back(), "j");
  EXPECT_TRUE(fs::exists(dir / "data/stl10_binary.tar.gz"));  // kept, as torchvision keeps it
  EXPECT_FALSE(any_name_contains(dir / "data", "extracting"));
  make_dataset("stl10", "{root: " + (dir / "data/stl10_binary/") + ", download: true}");
  EXPECT_EQ(gets(), std::vector<std::string>{"/stl10_binary.tar.gz"});
}

TEST_F(DatasetDownload, TheRootMustBeNamedAsTheArchivesTopFolder) {
  set_env(serve_stl10());
  std::string e = test::error_of<DataError>(
      [&] { make_dataset("stl10", "{root: " + (dir / "data/stl10") + ", download: true}"); });
  EXPECT_EQ(e, "data.dataset.root: with download: true the folder must be named stl10_binary (the archive's top "
               "folder), not " + (dir / "data/stl10"));
  EXPECT_TRUE(gets().empty());
}

TEST_F(DatasetDownload, PetImagesFillAnEmptyRoot) {
  set_env(serve_pets());
  fs::create_directories(dir / "data/oxford-pets/images");
  auto d = make_dataset("pets_folder", pets_params(dir / "data/oxford-pets/images"));
  EXPECT_EQ(d.classes, (std::vector<std::string>{"Abyssinian", "Bengal"}));
  EXPECT_EQ(d.train->size() + d.eval->size(), 10u);
  EXPECT_EQ(d.train->get(0).image.sizes(), (std::vector<int64_t>{12, 16, 3}));
  EXPECT_TRUE(fs::exists(dir / "data/oxford-pets/images.tar.gz"));
}

TEST_F(DatasetDownload, ARootWithOtherFilesIsNotTouched) {
  set_env(serve_stl10());
  test::write_file(dir / "data/stl10_binary/train_X.bin", "x");
  std::string e = test::error_of<DataError>(
      [&] { make_dataset("stl10", "{root: " + (dir / "data/stl10_binary") + ", download: true}"); });
  EXPECT_NE(e.find("holds files but not the whole STL-10 dataset"), std::string::npos) << e;
  EXPECT_TRUE(gets().empty());
}

// A mirror slow enough (1 s a file) that two processes started together overlap.
class DatasetDownloadSlowMirror : public DatasetDownload {
  const char* delay() const override { return "1"; }
};

// Two processes of a node at once: one fetches and unpacks, the other waits and reads.
TEST_F(DatasetDownloadSlowMirror, TwoProcessesOnANodeFetchAndUnpackOnce) {
  std::string md5s = serve_pets();
  std::string check = env(md5s) + test::trainrun("check --download " + test::source("recipes/quickstart.yaml") +
                                                 " 'data.dataset={name: pets_folder, root: " +
                                                 (dir / "data/oxford-pets/images") +
                                                 ", download: true, channels: 1}' 'data.train_transforms=[{resize: {size: "
                                                 "[28, 28]}}, to_tensor]' 'data.eval_transforms=[{resize: {size: [28, "
                                                 "28]}}, to_tensor]' world.nproc_per_node=1 data.batch_size=2 "
                                                 "data.eval_batch_size=2 output.dir=" + (dir / "run"));
  test::write_file(dir / "both.sh", "(" + check + " >" + (dir / "a.out") + " 2>&1; echo $? >" + (dir / "a.rc") + ") &\n(" +
                                        check + " >" + (dir / "b.out") + " 2>&1; echo $? >" + (dir / "b.rc") + ")\nwait\n");
  test::run("bash " + (dir / "both.sh"));
  for (const char* p : {"a", "b"}) {
    EXPECT_EQ(test::read_file(dir / (std::string(p) + ".rc")), "0\n") << test::read_file(dir / (std::string(p) + ".out"));
    EXPECT_NE(test::read_file(dir / (std::string(p) + ".out")).find("data: pets_folder, 2 classes, 8 train / 2 validation"),
              std::string::npos)
        << test::read_file(dir / (std::string(p) + ".out"));
  }
  EXPECT_EQ(gets(), std::vector<std::string>{"/images.tar.gz"});
}

TEST_F(DatasetDownload, AnArchiveEntryOutsideTheFolderIsRefusedAndNothingIsUnpacked) {
  ASSERT_EQ(test::run(std::string(test::kPython) + " -c \"import io, sys, tarfile\n"
                      "t = tarfile.open(sys.argv[1], 'w:gz')\n"
                      "for name in ['images/Abyssinian_1.jpg', '../evil.txt']:\n"
                      "    i = tarfile.TarInfo(name); i.size = 4; t.addfile(i, io.BytesIO(b'evil'))\n"
                      "t.close()\" " + served("images.tar.gz"))
                .code,
            0);
  set_env(checksum("images.tar.gz"));
  std::string e = test::error_of<DataError>(
      [&] { make_dataset("pets_folder", pets_params(dir / "data/oxford-pets/images")); });
  EXPECT_NE(e.find("data.dataset: cannot unpack Oxford-IIIT Pet: " + (dir / "data/oxford-pets/images.tar.gz") +
                   ": entry '../evil.txt' points outside the folder (..); refused; or download " + url_ +
                   "/images.tar.gz yourself and unpack it into " + (dir / "data/oxford-pets")),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(dir / "data/evil.txt"));
  EXPECT_FALSE(fs::exists(dir / "data/oxford-pets/images"));
  EXPECT_FALSE(any_name_contains(dir / "data", "extracting"));
}

TEST(Archive, RefusesAbsolutePathsAndLinks) {
  test::TempDir dir;
  for (auto [entry, why] : {std::pair<std::string, std::string>{"i = tarfile.TarInfo('/tmp/abs.txt'); i.size = 1",
                                                                "entry '/tmp/abs.txt' has an absolute path; refused"},
                            {"i = tarfile.TarInfo('a/link'); i.type = tarfile.SYMTYPE; i.linkname = '/etc'",
                             "entry 'a/link' is a link; only files and folders are unpacked"}}) {
    std::string tar = dir / "x.tar";
    ASSERT_EQ(test::run(std::string(test::kPython) + " -c \"import io, sys, tarfile\nt = tarfile.open(sys.argv[1], 'w')\n" +
                        entry + "\nt.addfile(i, io.BytesIO(b'x'))\nt.close()\" " + tar)
                  .code,
              0);
    std::string e = test::error_of<ArchiveError>([&] { extract_archive(tar, dir / "out"); });
    EXPECT_EQ(e, tar + ": " + why);
    EXPECT_TRUE(fs::is_empty(dir / "out"));
  }
}

TEST(Archive, GunzipsASingleFile) {
  test::TempDir dir;
  test::write_file(dir / "a.txt", bytes(100000, 3));
  ASSERT_EQ(test::run("gzip -k " + (dir / "a.txt") + " && mv " + (dir / "a.txt") + " " + (dir / "b.txt")).code, 0);
  extract_archive(dir / "a.txt.gz", dir / "out");
  EXPECT_EQ(test::read_file(dir / "out/a.txt"), test::read_file(dir / "b.txt"));
  std::string e = test::error_of<ArchiveError>([&] { gunzip_file(dir / "b.txt", dir / "c.txt"); });
  EXPECT_EQ(e, (dir / "b.txt") + ": not a gzip file");
  EXPECT_FALSE(fs::exists(dir / "c.txt.incomplete"));
}

}  // namespace
}  // namespace trainrun
