// The dataset sources (stl10, pets_folder, image_folder) and their bad files. Decoding and the
// loader: decode_loader_test.cpp. Every fixture is written by the test itself.
#include "components/data/image.h"
#include "components/data/loader/loader.h"
#include "components/data/sources/image_files.h"
#include "components/make_dataset.h"
#include "test_util.h"

#include <torch/torch.h>

#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using test::make_dataset;
using test::picture;
using test::transforms;

// STL-10's layout written byte by byte from its description: per image 3 planes (R, G, B),
// each plane column-major (x outer, y inner); one label byte per image, 1..10.
void write_stl10(const std::string& dir, const std::string& split, const at::Tensor& images, const std::vector<uint8_t>& labels) {
  std::string x, y;
  auto a = images.accessor<uint8_t, 4>();  // N x 96 x 96 x 3 (H x W x C)
  for (int64_t n = 0; n < images.size(0); ++n)
    for (int c = 0; c < 3; ++c)
      for (int col = 0; col < 96; ++col)
        for (int row = 0; row < 96; ++row) x.push_back(char(a[n][row][col][c]));
  for (uint8_t l : labels) y.push_back(char(l));
  test::write_file(dir + "/" + split + "_X.bin", x);
  test::write_file(dir + "/" + split + "_y.bin", y);
}

class Stl10 : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::manual_seed(0);
    train = torch::randint(0, 256, {5, 96, 96, 3}, torch::kUInt8);
    test_images = torch::randint(0, 256, {3, 96, 96, 3}, torch::kUInt8);
    write_stl10(dir / "stl", "train", train, {1, 10, 3, 3, 7});
    write_stl10(dir / "stl", "test", test_images, {2, 2, 9});
    test::write_file(dir / "stl/unlabeled_X.bin", "ignored");
  }
  test::TempDir dir;
  at::Tensor train, test_images;
};

TEST_F(Stl10, ReadsTheOfficialLayoutPixelForPixel) {
  test::write_file(dir / "stl/class_names.txt", "airplane\nbird\ncar\ncat\ndeer\ndog\nhorse\nmonkey\nship\ntruck\n");
  auto d = make_dataset("stl10", "{root: " + (dir / "stl") + "}");
  ASSERT_EQ(d.train->size(), 5u);
  ASSERT_EQ(d.eval->size(), 3u);
  EXPECT_EQ(d.classes.size(), 10u);
  EXPECT_EQ(d.classes[9], "truck");
  std::vector<int64_t> labels{0, 9, 2, 2, 6};
  for (std::size_t i = 0; i < 5; ++i) {
    Example e = d.train->get(i);
    EXPECT_TRUE(e.image.equal(train[int64_t(i)])) << i;
    EXPECT_EQ(e.label, labels[i]);
    EXPECT_EQ(d.train->label(i), labels[i]);
  }
  EXPECT_TRUE(d.eval->get(2).image.equal(test_images[2]));
  EXPECT_EQ(d.eval->label(2), 8);
}

TEST_F(Stl10, ClassNamesFileNamesTheClasses) {
  test::write_file(dir / "stl/class_names.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
  EXPECT_EQ(make_dataset("stl10", "{root: " + (dir / "stl") + "}").classes[3], "d");
}

TEST_F(Stl10, BadFilesAreNamed) {
  test::write_file(dir / "stl/train_X.bin", std::string(96 * 96 * 3 + 5, 'x'));
  std::string err = test::error_of<DataError>([&] { make_dataset("stl10", "{root: " + (dir / "stl") + "}"); });
  EXPECT_NE(err.find("train_X.bin"), std::string::npos) << err;
  EXPECT_NE(err.find("not a whole number"), std::string::npos) << err;

  write_stl10(dir / "stl", "train", train, {1, 2, 3});
  err = test::error_of<DataError>([&] { make_dataset("stl10", "{root: " + (dir / "stl") + "}"); });
  EXPECT_NE(err.find("train_y.bin: holds 3 labels but"), std::string::npos) << err;

  write_stl10(dir / "stl", "train", train, {1, 2, 3, 4, 11});
  err = test::error_of<DataError>([&] { make_dataset("stl10", "{root: " + (dir / "stl") + "}"); });
  EXPECT_NE(err.find("labels must be 1..10"), std::string::npos) << err;

  write_stl10(dir / "stl", "train", train, {1, 2, 3, 4, 5});
  fs::remove(dir / "stl/test_y.bin");
  err = test::error_of<DataError>([&] { make_dataset("stl10", "{root: " + (dir / "stl") + "}"); });
  EXPECT_NE(err.find("test_y.bin: no such file"), std::string::npos) << err;
}

// A pets-like folder: two breeds with underscores or capitals, a .txt decoy and a corrupt .jpg.
class PetsFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir / "pets");
    int64_t seed = 0;
    for (int i = 1; i <= 6; ++i) write_image(dir / ("pets/american_bulldog_" + std::to_string(i * 2) + ".jpg"), picture(++seed));
    for (int i = 1; i <= 5; ++i) write_image(dir / ("pets/Abyssinian_" + std::to_string(i) + ".jpg"), picture(++seed));
    test::write_file(dir / "pets/README.txt", "not an image");
    test::write_file(dir / "pets/Abyssinian_99.jpg", "\xff\xd8\xff garbage, not a JPEG");
  }
  DatasetSplits load(const std::string& extra = "") {
    return make_dataset("pets_folder", "{root: " + (dir / "pets") +
                                           ", label_regex: '^(.*)_\\d+\\.jpg$', val_fraction: 0.25, split_seed: 42, "
                                           "channels: 3" + extra + "}");
  }
  test::TempDir dir;
};

TEST_F(PetsFolder, LabelIsTheRegexGroupAndClassesAreSorted) {
  DatasetSplits d = load();
  EXPECT_EQ(d.classes, (std::vector<std::string>{"Abyssinian", "american_bulldog"}));
  EXPECT_EQ(d.train->size() + d.eval->size(), 12u);  // the .txt is skipped; the corrupt .jpg matches
  auto& train = dynamic_cast<const ImageFiles&>(*d.train);
  for (std::size_t i = 0; i < train.size(); ++i) {
    std::string name = fs::path(train.path(i)).filename().string();
    EXPECT_EQ(name.rfind(d.classes[std::size_t(train.label(i))] + "_", 0), 0u) << name;
  }
}

TEST_F(PetsFolder, SplitIsTorchRandpermOverTheSortedFiles) {
  DatasetSplits d = load();
  auto r = test::run(std::string(test::kPython) +
                     " -c 'import torch; print(*torch.randperm(12, generator=torch.Generator().manual_seed(42)).tolist())'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<int64_t> perm;
  for (int64_t v; in >> v;) perm.push_back(v);
  ASSERT_EQ(perm.size(), 12u);
  std::vector<std::string> sorted;
  for (auto& e : fs::directory_iterator(dir / "pets"))
    if (e.path().extension() == ".jpg") sorted.push_back(e.path().string());
  std::sort(sorted.begin(), sorted.end());
  auto& train = dynamic_cast<const ImageFiles&>(*d.train);
  auto& eval = dynamic_cast<const ImageFiles&>(*d.eval);
  ASSERT_EQ(train.size(), 9u);  // int(0.75 * 12)
  ASSERT_EQ(eval.size(), 3u);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(train.path(i), sorted[std::size_t(perm[i])]);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(eval.path(i), sorted[std::size_t(perm[9 + i])]);
}

TEST_F(PetsFolder, UndecodableImagesAreSkippedAndCountedOrFatal) {
  DatasetSplits d = load();
  Compose t = transforms({{"resize", "{size: [8, 8], max_size: null}"}, {"to_tensor", "{}"}});
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = 2;
  o.shard.shuffle = o.shard.pad = false;
  int64_t skipped = 0;
  // Both splits, so the corrupt file is counted wherever the split put it.
  for (auto split : {d.train, d.eval}) {
    DataLoader loader(split, t, o);
    loader.start_epoch(0);
    int64_t seen = 0;
    while (auto b = loader.next()) seen += b->inputs.size(0);
    EXPECT_EQ(seen + loader.skipped_files(), int64_t(split->size()));
    skipped += loader.skipped_files();
  }
  EXPECT_EQ(skipped, 1);

  o.skip_bad_files = false;
  std::string err;
  for (auto split : {d.train, d.eval}) {
    DataLoader loader(split, t, o);
    loader.start_epoch(0);
    std::string e = test::error_of<UnreadableFile>([&] {
      while (loader.next()) {
      }
    });
    if (e != "(no error)") err = e;
  }
  EXPECT_NE(err.find("Abyssinian_99.jpg"), std::string::npos) << err;
}

TEST_F(PetsFolder, NoMatchingFileAndBadRegexAreOneLineErrors) {
  std::string err = test::error_of<DataError>([&] { load(); });
  EXPECT_EQ(err, "(no error)");
  err = test::error_of<DataError>([&] {
    make_dataset("pets_folder", "{root: " + (dir / "pets") + ", label_regex: '^(.*)\\.png$', val_fraction: 0.2, split_seed: 1, channels: 3}");
  });
  EXPECT_NE(err.find("no file matches label_regex"), std::string::npos) << err;
  err = test::error_of<DataError>([&] {
    make_dataset("pets_folder", "{root: " + (dir / "pets") + ", label_regex: '^.*\\.jpg$', val_fraction: 0.2, split_seed: 1, channels: 3}");
  });
  EXPECT_NE(err.find("data.dataset.label_regex"), std::string::npos) << err;
  EXPECT_NE(err.find("no capture group"), std::string::npos) << err;
}

// val_fraction is checked against the files found: a split with nothing in it is one line that
// shows the arithmetic (torch.utils.data.random_split's int(), as the Accelerate example's).
TEST_F(PetsFolder, ValFractionThatEmptiesASplitIsOneLine) {
  auto with = [&](const std::string& fraction) {
    return make_dataset("pets_folder", "{root: " + (dir / "pets") + ", label_regex: '^(.*)_\\d+\\.jpg$', val_fraction: " +
                                           fraction + ", split_seed: 42, channels: 3}");
  };
  std::string err = test::error_of<DataError>([&] { with("0.95"); });
  EXPECT_EQ(err, (dir / "pets") + ": val_fraction 0.95 of 12 images leaves an empty training split (python's int((1 - 0.95) * 12) = 0)");
  DatasetSplits d = with("0.01");  // int(0.99 * 12) = 11: one validation image
  EXPECT_EQ(d.train->size(), 11u);
  EXPECT_EQ(d.eval->size(), 1u);
}

TEST(ImageFolder, ClassesAreSortedSubfoldersAndOnlyImageFilesCount) {
  test::TempDir dir;
  for (const char* sub : {"train/dog", "train/cat/nested", "train/Bird", "val/dog", "val/Bird"})
    fs::create_directories(dir / sub);
  int64_t seed = 100;
  for (const char* cls : {"dog", "cat", "Bird"})
    for (int i = 0; i < 3; ++i) write_image(dir / ("train/" + std::string(cls) + "/" + std::to_string(i) + ".png"), picture(++seed));
  write_image(dir / "train/cat/nested/deep.JPG", picture(++seed));  // recursive, case-insensitive extension
  test::write_file(dir / "train/cat/notes.txt", "x");
  write_image(dir / "val/dog/a.png", picture(++seed));
  write_image(dir / "val/Bird/b.png", picture(++seed));
  auto d = make_dataset("image_folder", "{root: " + (dir / "train") + ", val_root: " + (dir / "val") +
                                            ", val_fraction: 0.2, split_seed: 42, channels: 1}");
  EXPECT_EQ(d.classes, (std::vector<std::string>{"Bird", "cat", "dog"}));
  auto& train = dynamic_cast<const ImageFiles&>(*d.train);
  ASSERT_EQ(train.size(), 10u);
  EXPECT_EQ(train.label(3), 1);
  EXPECT_EQ(fs::path(train.path(3)).filename(), "0.png");
  EXPECT_EQ(fs::path(train.path(6)).filename(), "deep.JPG");
  ASSERT_EQ(d.eval->size(), 2u);
  EXPECT_EQ(d.eval->label(0), 0);
  EXPECT_EQ(d.eval->label(1), 2);
  EXPECT_EQ(d.eval->get(0).image.sizes(), (std::vector<int64_t>{30, 40, 1}));

  auto split = make_dataset("image_folder", "{root: " + (dir / "train") + ", val_root: null, val_fraction: 0.3, split_seed: 42, channels: 3}");
  EXPECT_EQ(split.train->size(), 7u);  // int(0.7 * 10)
  EXPECT_EQ(split.eval->size(), 3u);
}

}  // namespace
}  // namespace trainrun
