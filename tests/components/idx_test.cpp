// IDX parsing (MNIST's format), raw and gzip, and the errors a broken download gives.
#include "components/data/dataset.h"
#include "components/data/sources/idx.h"
#include "registry/registry.h"

#include "test_util.h"

#include <ATen/ATen.h>
#include <zlib.h>

namespace trainrun {
namespace {

using test::TempDir;

std::string idx_bytes(const std::vector<int64_t>& dims, const std::vector<uint8_t>& data) {
  std::string s{'\0', '\0', '\x08', char(dims.size())};
  for (int64_t d : dims)
    for (int shift : {24, 16, 8, 0}) s += char((d >> shift) & 0xff);
  s.append(data.begin(), data.end());
  return s;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), unsigned(bytes.size()));
  gzclose(f);
}

std::string error_of(const std::string& path) {
  try {
    read_idx(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Idx, ReadsRawAndGzipIdentically) {
  TempDir dir;
  std::vector<uint8_t> pixels(2 * 3 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 7);
  test::write_file(dir / "a-idx3-ubyte", idx_bytes({2, 3, 4}, pixels));
  write_gz(dir / "a-idx3-ubyte.gz", idx_bytes({2, 3, 4}, pixels));
  for (auto path : {dir / "a-idx3-ubyte", dir / "a-idx3-ubyte.gz"}) {
    at::Tensor t = read_idx(path);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(t[1][2][3].item<int>(), pixels[23]);
    EXPECT_EQ(t[0][1][0].item<int>(), pixels[4]);
  }
}

// One gzip member is inflated whole (libdeflate); several members, or a trailer whose size is not
// the data's, go through zlib's stream: the same tensor, or the same refusal, either way.
TEST(Idx, GzipOfSeveralMembersReadsTheSameAndALyingTrailerIsRefused) {
  TempDir dir;
  std::vector<uint8_t> pixels(5 * 7);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 13 + 1);
  const std::string bytes = idx_bytes({5, 7}, pixels);
  write_gz(dir / "one.gz", bytes);
  write_gz(dir / "head.gz", bytes.substr(0, 10));
  write_gz(dir / "rest.gz", bytes.substr(10));
  test::write_file(dir / "two.gz", test::read_file(dir / "head.gz") + test::read_file(dir / "rest.gz"));
  std::string lying = test::read_file(dir / "one.gz");
  lying[lying.size() - 4] = char(lying[lying.size() - 4] + 1);  // ISIZE one more than the data
  test::write_file(dir / "lying.gz", lying);
  at::Tensor expected = read_idx(dir / "one.gz");
  ASSERT_EQ(expected.sizes(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(expected[4][6].item<int>(), pixels[34]);
  EXPECT_TRUE(read_idx(dir / "two.gz").equal(expected));
  EXPECT_NE(error_of(dir / "lying.gz"), "(no error)");  // gzip's integrity check, as `gzip -t` says
  // Cut inside the deflate stream: both readers refuse it; zlib's says how much data it found.
  test::write_file(dir / "cut.gz", test::read_file(dir / "one.gz").substr(0, 30));
  EXPECT_NE(error_of(dir / "cut.gz").find(": truncated"), std::string::npos) << error_of(dir / "cut.gz");
}

TEST(Idx, ErrorsNameTheFile) {
  TempDir dir;
  test::write_file(dir / "short", idx_bytes({10, 28, 28}, std::vector<uint8_t>(100)));
  EXPECT_EQ(error_of(dir / "short"), (dir / "short") + ": truncated: header promises 10 x 28 x 28 = 7840 bytes of data, found 100");
  // A header promising more than 64 bits can count (found by fuzz/idx_fuzz.cpp: it used to
  // allocate the promise before reading), and data past the promise.
  test::write_file(dir / "huge", idx_bytes({0xffffffff, 0xffffffff, 0xffffffff}, std::vector<uint8_t>(10)));
  EXPECT_EQ(error_of(dir / "huge"), (dir / "huge") + ": truncated: header promises 4294967295 x 4294967295 x 4294967295 "
                                                    "(more than any file holds) bytes of data, found 10");
  test::write_file(dir / "zero", idx_bytes({0, 0xfc005d00, 0x3a0005ef, 0xaef}, {}));
  EXPECT_EQ(error_of(dir / "zero"), (dir / "zero") + ": truncated: header promises 0 x 4227882240 x 973080047 x 2799 "
                                                    "(more than any file holds) bytes of data, found 0");
  test::write_file(dir / "long", idx_bytes({2, 3}, std::vector<uint8_t>(7)));
  EXPECT_EQ(error_of(dir / "long"), (dir / "long") + ": longer than its header says: header promises 2 x 3 = 6 bytes of data, found more");
  test::write_file(dir / "html", "<html>404 not found</html>");
  EXPECT_EQ(error_of(dir / "html"), (dir / "html") + ": not an IDX file (bad magic)");
  test::write_file(dir / "tiny", std::string("\0\0", 2));
  EXPECT_EQ(error_of(dir / "tiny"), (dir / "tiny") + ": truncated IDX header");
  EXPECT_EQ(error_of(dir / "absent"), (dir / "absent") + ": no such file");
  test::write_file(dir / "float", std::string("\0\0\x0d\x01\0\0\0\1abcd", 12));
  EXPECT_EQ(error_of(dir / "float"), (dir / "float") + ": IDX element type is not uint8");
}

DatasetSplits make_mnist(const std::string& root) {
  YAML::Node cfg;
  cfg["name"] = "mnist";
  cfg["root"] = root;
  cfg["classes"] = YAML::Node();
  return Registry<Dataset>::instance().get("mnist").make(Config(cfg, "data.dataset"));
}

void write_split(const TempDir& dir, const std::string& prefix, int n_images, int n_labels, uint8_t max_label = 9) {
  std::vector<uint8_t> pixels(std::size_t(n_images) * 28 * 28, 0);
  std::vector<uint8_t> labels(static_cast<std::size_t>(n_labels));
  for (int i = 0; i < n_labels; ++i) labels[std::size_t(i)] = uint8_t(i % (max_label + 1));
  for (int i = 0; i < n_images; ++i) pixels[std::size_t(i) * 784 + 5] = uint8_t(i);
  write_gz(dir / (prefix + "-images-idx3-ubyte.gz"), idx_bytes({n_images, 28, 28}, pixels));
  test::write_file(dir / (prefix + "-labels-idx1-ubyte"), idx_bytes({n_labels}, labels));
}

TEST(MnistDataset, ReadsBothSplitsAsHwcImages) {
  TempDir dir;
  write_split(dir, "train", 12, 12);
  write_split(dir, "t10k", 5, 5);
  DatasetSplits s = make_mnist(dir.path().string());
  ASSERT_EQ(s.train->size(), 12u);
  ASSERT_EQ(s.eval->size(), 5u);
  EXPECT_EQ(s.classes.size(), 10u);
  Example ex = s.train->get(11);
  EXPECT_EQ(ex.image.sizes(), (std::vector<int64_t>{28, 28, 1}));
  EXPECT_EQ(ex.image[0][5][0].item<int>(), 11);
  EXPECT_EQ(ex.label, 1);
  EXPECT_EQ(s.eval->label(4), 4);
}

TEST(MnistDataset, MismatchedMissingAndOutOfRangeFilesAreErrors) {
  TempDir dir;
  write_split(dir, "train", 12, 11);
  write_split(dir, "t10k", 5, 5);
  try {
    make_mnist(dir.path().string());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "train-labels-idx1-ubyte") + ": holds 11 labels but " +
                                         (dir / "train-images-idx3-ubyte.gz") + " holds 12 images");
  }
  TempDir empty;
  EXPECT_THROW(make_mnist(empty.path().string()), DataError);
  try {
    make_mnist((empty / "nowhere"));
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), (empty / "nowhere") + ": no such folder");
  }
  TempDir bad;
  write_split(bad, "train", 12, 12, 11);
  write_split(bad, "t10k", 5, 5);
  EXPECT_THROW(make_mnist(bad.path().string()), DataError);
}

TEST(MnistDataset, ReadsTheRealFashionMnist) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  DatasetSplits s = make_mnist(test::kFashionMnist);
  EXPECT_EQ(s.train->size(), 60000u);
  EXPECT_EQ(s.eval->size(), 10000u);
  // torchvision.datasets.FashionMNIST(train=False)[0] is an ankle boot (9), [1] a pullover (2).
  EXPECT_EQ(s.eval->label(0), 9);
  EXPECT_EQ(s.eval->label(1), 2);
}

}  // namespace
}  // namespace trainrun
