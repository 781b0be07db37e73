// Datasets (stl10, pets_folder, image_folder), bad files, and the loader's determinism and
// sharding. Every fixture is written by the test itself.
#include "components/data/image.h"
#include "components/data/loader/loader.h"
#include "components/data/sources/image_files.h"
#include "components/make_dataset.h"
#include "test_util.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using test::load_epoch;
using test::make_dataset;

std::shared_ptr<Transform> transform(const std::string& name, const std::string& params) {
  return Registry<Transform>::instance().get(name).make(Config(YAML::Load(params), name), ModelInput{});
}

Compose transforms(const std::vector<std::pair<std::string, std::string>>& steps) {
  std::vector<std::shared_ptr<Transform>> out;
  for (auto& [name, params] : steps) out.push_back(transform(name, params));
  return Compose(out);
}

// A small smooth RGB image, different for every seed.
at::Tensor picture(int64_t seed, int64_t h = 30, int64_t w = 40) {
  torch::manual_seed(seed);
  at::Tensor small = torch::rand({1, 3, 4, 5});
  at::Tensor big = torch::nn::functional::interpolate(
      small, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false));
  return (big[0] * 255).permute({1, 2, 0}).to(torch::kUInt8).contiguous();
}

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

TEST(Decode, GrayscaleIsPilsLumaAndMissingFilesAreNamed) {
  test::TempDir dir;
  at::Tensor rgb = picture(5);
  write_image(dir / "a.png", rgb);  // lossless
  EXPECT_TRUE(decode_image(dir / "a.png", 3).equal(rgb));
  at::Tensor f = rgb.to(torch::kDouble);
  at::Tensor luma = (f.select(2, 0) * 0.299 + f.select(2, 1) * 0.587 + f.select(2, 2) * 0.114).round();
  EXPECT_LE((decode_image(dir / "a.png", 1).squeeze(2).to(torch::kDouble) - luma).abs().max().item<double>(), 1);
  std::string err = test::error_of<UnreadableFile>([&] { decode_image(dir / "nope.jpg", 3); });
  EXPECT_NE(err.find("nope.jpg: cannot open"), std::string::npos) << err;
}

// A few header bytes can claim 20000 x 35000 pixels: refused before anything is decoded, as PIL's
// decompression-bomb check refuses it in torchvision's loader. Found by fuzz/image_fuzz.cpp
// (a 172-byte JPEG that made OpenCV allocate and decode 2 GB; fuzz/regressions/image/).
TEST(Decode, ImagesOverPilsPixelLimitAreRefusedFromTheHeader) {
  test::TempDir dir;
  write_image(dir / "a.jpg", picture(5));
  write_image(dir / "a.png", picture(5));
  std::string jpg = test::read_file(dir / "a.jpg"), png = test::read_file(dir / "a.png");
  std::size_t sof = jpg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  jpg.replace(sof + 5, 4, std::string("\x4e\x47\x89\x50", 4));  // height 20039, width 35152
  test::write_file(dir / "bomb.jpg", jpg);
  png.replace(16, 8, std::string("\x00\x00\x89\x50\x00\x00\x4e\x47", 8));  // width 35152, height 20039
  test::write_file(dir / "bomb.png", png);
  for (const char* name : {"bomb.jpg", "bomb.png"}) {
    std::string err = test::error_of<UnreadableFile>([&] { decode_image(dir / name, 3); });
    EXPECT_EQ(err, (dir / name) + ": 35152 x 20039 = 704410928 pixels, more than 178956970 (PIL's decompression-bomb "
                                  "limit, which torchvision's loader enforces)");
  }
  // The largest sizes a PNG can state (their product overflowed a signed 64-bit count: UBSan, fuzz/regressions/image/).
  png.replace(16, 8, std::string(8, '\xff'));
  test::write_file(dir / "huge.png", png);
  EXPECT_EQ(test::error_of<UnreadableFile>([&] { decode_image(dir / "huge.png", 3); }),
            (dir / "huge.png") + ": 4294967295 x 4294967295 = 18446744065119617025 pixels, more than 178956970 (PIL's "
                                 "decompression-bomb limit, which torchvision's loader enforces)");
  EXPECT_EQ(decode_image(dir / "a.jpg", 3).size(0), picture(5).size(0));  // an ordinary one still decodes
}

// Only the formats torchvision's ImageFolder lists reach OpenCV: a malformed DICOM file (a "DICM"
// at byte 128) made Debian's OpenCV call GDCM, which aborted the process (fuzz/image_fuzz.cpp,
// fuzz/regressions/image/gdcm-abort).
TEST(Decode, OnlyTheListedFormatsReachTheDecoders) {
  test::TempDir dir;
  std::string dicom = "\x89P" + std::string(126, '6') + "DICM" + std::string("\x00\x14\x14", 3);
  test::write_file(dir / "scan.png", dicom);
  EXPECT_EQ(test::error_of<UnreadableFile>([&] { decode_image(dir / "scan.png", 3); }),
            (dir / "scan.png") + ": cannot decode the image: not a JPEG, PNG, BMP, PPM/PGM, TIFF or WebP file (judged by its first bytes)");
  test::write_file(dir / "page.html", "<html>404</html>");
  EXPECT_NE(test::error_of<UnreadableFile>([&] { decode_image(dir / "page.html", 1); }).find(": cannot decode the image: not a JPEG, PNG"),
            std::string::npos);
  for (const char* name : {"a.bmp", "a.ppm", "a.tiff", "a.webp", "a.png"}) {  // every listed one still decodes
    write_image(dir / name, picture(4));
    EXPECT_EQ(decode_image(dir / name, 3).size(0), picture(4).size(0)) << name;
  }
}

// A dataset of distinct constant images whose pixel value is the index.
class Indexed : public Dataset {
 public:
  explicit Indexed(std::size_t n) : n_(n) {}
  std::size_t size() const override { return n_; }
  Example get(std::size_t i) const override {
    return {torch::full({20, 20, 3}, int64_t(i % 256), torch::kUInt8), int64_t(i)};
  }
  int64_t label(std::size_t i) const override { return int64_t(i); }

 private:
  std::size_t n_;
};

TEST(Loader, BatchesAreIdenticalWhateverTheNumberOfWorkers) {
  Compose t = transforms({{"random_resized_crop", "{size: 12, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}"},
                          {"random_horizontal_flip", "{p: 0.5}"},
                          {"to_tensor", "{}"}});
  // Noise in the pixels so that crops and flips show in the output.
  struct Noisy : Indexed {
    using Indexed::Indexed;
    Example get(std::size_t i) const override {
      auto g = at::make_generator<at::CPUGeneratorImpl>(i);
      return {torch::randint(0, 256, {20, 24, 3}, g, torch::kUInt8), int64_t(i)};
    }
  };
  auto noisy = std::make_shared<Noisy>(37);
  std::vector<std::vector<Batch>> runs;
  for (int64_t workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 5;
    o.workers = workers;
    o.shard.seed = 11;
    DataLoader loader(noisy, t, o);
    load_epoch(loader, 0);  // a first epoch, so the second shows that epochs differ but workers do not
    runs.push_back(load_epoch(loader, 1));
  }
  ASSERT_EQ(runs[0].size(), 8u);
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (std::size_t b = 0; b < runs[0].size(); ++b) {
      EXPECT_TRUE(runs[r][b].inputs.equal(runs[0][b].inputs)) << "run " << r << " batch " << b;
      EXPECT_TRUE(runs[r][b].targets.equal(runs[0][b].targets));
    }
}

// A transform with its optional shortcuts hidden: as the first step, crops_first() (the loader
// then decodes whole images and crops them); as the last, apply_into() (it then stacks the
// results into each batch). The slow paths that the fast ones must match.
class Plain : public Transform {
 public:
  explicit Plain(std::shared_ptr<Transform> t) : t_(std::move(t)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override { return (*t_)(x, rng); }

 private:
  std::shared_ptr<Transform> t_;
};

TEST(Loader, BatchesWrittenInPlaceAreTheStackedOnes) {
  // Noise, and every 9th file unreadable: its batch is one short and falls back to stacking.
  struct NoisyWithHoles : Indexed {
    using Indexed::Indexed;
    Example get(std::size_t i) const override {
      if (i % 9 == 4) throw UnreadableFile("file " + std::to_string(i) + ": cannot decode the image");
      auto g = at::make_generator<at::CPUGeneratorImpl>(i);
      return {torch::randint(0, 256, {20, 24, 3}, g, torch::kUInt8), int64_t(i)};
    }
  };
  auto data = std::make_shared<NoisyWithHoles>(41);
  auto rrc = transform("random_resized_crop", "{size: 12, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}");
  auto flip = transform("random_horizontal_flip", "{p: 0.5}");
  auto tt = transform("to_tensor", "{}");
  auto norm = transform("normalize", "{mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}");
  for (int64_t workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 6;
    o.workers = workers;
    o.shard.seed = 5;
    DataLoader in_place(data, Compose({rrc, flip, tt, norm}), o);
    DataLoader stacked(data, Compose({rrc, flip, tt, std::make_shared<Plain>(norm)}), o);
    for (int64_t e : {0, 1}) {
      auto a = load_epoch(in_place, e), b = load_epoch(stacked, e);  // every batch held: none may share memory
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(a[k].inputs.equal(b[k].inputs)) << "workers " << workers << " epoch " << e << " batch " << k;
        EXPECT_TRUE(a[k].targets.equal(b[k].targets));
      }
    }
  }
}

TEST(Loader, RanksCoverEveryIndexOncePerEpoch) {
  auto data = std::make_shared<Indexed>(23);
  for (int64_t world : {1, 2, 3, 4}) {
    std::multiset<int64_t> eval_seen, train_seen;
    for (int64_t rank = 0; rank < world; ++rank) {
      LoaderOptions o;
      o.batch_size = 4;
      o.workers = 2;
      o.shard.rank = rank;
      o.shard.world_size = world;
      o.shard.seed = 5;
      for (bool train : {true, false}) {
        o.shard.shuffle = o.shard.pad = train;
        DataLoader loader(data, transforms({{"to_tensor", "{}"}}), o);
        for (auto& b : load_epoch(loader, 3))
          for (int64_t i = 0; i < b.targets.size(0); ++i) (train ? train_seen : eval_seen).insert(b.targets[i].item<int64_t>());
      }
    }
    EXPECT_EQ(eval_seen.size(), 23u) << world;
    for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(eval_seen.count(i), 1u) << i;
    // Training pads to a multiple of the world size with the first indices of the permutation.
    EXPECT_EQ(int64_t(train_seen.size()), (23 + world - 1) / world * world);
    for (int64_t i = 0; i < 23; ++i) EXPECT_GE(train_seen.count(i), 1u) << i;
  }
}

// Noisy colour JPEGs (4:2:0, OpenCV's default) and a grayscale one, of awkward sizes: the
// chroma upsampling at a crop's edges is where a partial decode could differ.
std::vector<std::string> write_jpegs(const std::string& dir) {
  std::vector<std::string> paths;
  int64_t seed = 100;
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{375, 500}, {500, 333}, {37, 53}, {16, 16}, {9, 13}, {120, 7}}) {
    at::Tensor img = (picture(++seed, h, w).to(torch::kInt) +
                      torch::randint(-40, 40, {h, w, 3}, at::make_generator<at::CPUGeneratorImpl>(seed), torch::kInt))
                         .clamp(0, 255).to(torch::kUInt8);
    paths.push_back(dir + "/c" + std::to_string(h) + "x" + std::to_string(w) + ".jpg");
    write_image(paths.back(), img);
  }
  at::Tensor gray = picture(++seed, 61, 45).select(2, 1).unsqueeze(2).contiguous();
  paths.push_back(dir + "/gray.jpg");
  write_image(paths.back(), gray);  // a one-component JPEG
  // OpenCV writes 4:2:0; PIL (as photos come from other cameras and tools) also 4:2:2 and 4:4:4.
  auto r = test::run(std::string(test::kPython) + " -c \"import numpy as np, sys; from PIL import Image; " +
                     "a = np.random.default_rng(5).integers(0, 256, (83, 121, 3), dtype=np.uint8); " +
                     "[Image.fromarray(a).save(sys.argv[1] + '/pil%d.jpg' % s, quality=90, subsampling=s) for s in (0, 1, 2)]; " +
                     "Image.fromarray(a[:77, :101]).save(sys.argv[1] + '/progressive.jpg', quality=85, progressive=True)\" " +
                     dir);
  EXPECT_EQ(r.code, 0) << r.err;
  for (int s : {0, 1, 2}) paths.push_back(dir + "/pil" + std::to_string(s) + ".jpg");
  paths.push_back(dir + "/progressive.jpg");
  return paths;
}

// decode_image's own libjpeg-turbo path against PIL (torchvision's loader) on every kind of JPEG
// above: RGB identical; luma within 1 (PIL's and OpenCV's fixed-point 601-2 weights).
TEST(Decode, JpegsAreDecodedAsPilDecodesThem) {
  test::TempDir dir;
  auto paths = write_jpegs(dir.path().string());
  std::string list;
  for (auto& p : paths) list += " " + p;
  auto r = test::run(std::string(test::kPython) + " -c \"import sys, numpy as np; from PIL import Image; " +
                     "[open(p + '.' + m, 'wb').write(np.ascontiguousarray(Image.open(p).convert(m)).tobytes()) " +
                     "for p in sys.argv[1:] for m in ('RGB', 'L')]\"" + list);
  ASSERT_EQ(r.code, 0) << r.err;
  for (auto& p : paths) {
    at::Tensor rgb = decode_image(p, 3), luma = decode_image(p, 1);
    std::string want_rgb = test::read_file(p + ".RGB"), want_luma = test::read_file(p + ".L");
    ASSERT_EQ(int64_t(want_rgb.size()), rgb.numel()) << p;
    at::Tensor pil_rgb = torch::from_blob(want_rgb.data(), rgb.sizes(), torch::kUInt8);
    at::Tensor pil_luma = torch::from_blob(want_luma.data(), luma.sizes(), torch::kUInt8);
    EXPECT_TRUE(rgb.equal(pil_rgb)) << p;
    EXPECT_LE((luma.to(torch::kInt) - pil_luma.to(torch::kInt)).abs().max().item<int>(), 1) << p;
  }
}

TEST(DecodeRegion, JpegBoxesAreTheFullDecodeCroppedBitForBit) {
  test::TempDir dir;
  auto paths = write_jpegs(dir.path().string());
  Rng rng(7);
  int checked = 0;
  for (const auto& path : paths) {
    for (int64_t channels : {3, 1}) {
      at::Tensor full = decode_image(path, channels);
      int64_t H = full.size(0), W = full.size(1);
      std::vector<CropBox> boxes = {{0, 0, H, W}, {0, 0, 1, 1}, {H - 1, W - 1, 1, 1}, {0, W / 2, H, W - W / 2},
                                    {H / 3, 0, H - H / 3, (W + 1) / 2}, {1, 1, H - 2 > 0 ? H - 2 : 1, W - 2 > 0 ? W - 2 : 1}};
      for (int k = 0; k < 40; ++k) {  // random boxes, odd offsets and sizes included
        int64_t bh = 1 + int64_t(rng() % uint64_t(H)), bw = 1 + int64_t(rng() % uint64_t(W));
        boxes.push_back({int64_t(rng() % uint64_t(H - bh + 1)), int64_t(rng() % uint64_t(W - bw + 1)), bh, bw});
      }
      for (const CropBox& b : boxes) {
        int calls = 0;
        at::Tensor got = decode_image_region(path, channels, [&](int64_t h, int64_t w) {
          ++calls;
          EXPECT_EQ(h, H);
          EXPECT_EQ(w, W);
          return b;
        });
        ASSERT_EQ(calls, 1);
        at::Tensor want = full.narrow(0, b.top, b.height).narrow(1, b.left, b.width);
        ASSERT_TRUE(got.equal(want)) << path << " channels " << channels << " box " << b.top << "," << b.left << " "
                                     << b.height << "x" << b.width << " max diff "
                                     << (got.to(torch::kInt) - want.to(torch::kInt)).abs().max().item<int>();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
  // Not a JPEG: decoded whole, then cropped.
  write_image(dir / "p.png", picture(3));
  at::Tensor got = decode_image_region(dir / "p.png", 3, [](int64_t, int64_t) { return CropBox{2, 3, 5, 7}; });
  EXPECT_TRUE(got.equal(picture(3).narrow(0, 2, 5).narrow(1, 3, 7)));
  EXPECT_THROW(decode_image_region(dir / "nope.jpg", 3, [](int64_t h, int64_t w) { return CropBox{0, 0, h, w}; }),
               UnreadableFile);
}

TEST(DecodeRegion, LoaderBatchesAreTheSameAsWithFullDecodes) {
  test::TempDir dir;
  auto paths = write_jpegs(dir.path().string());
  write_image(dir / "p.png", picture(3));
  paths.push_back(dir / "p.png");
  for (int64_t channels : {3, 1}) {
    std::vector<std::string> many;
    std::vector<int64_t> labels;
    for (int rep = 0; rep < 4; ++rep)
      for (auto& p : paths) many.push_back(p), labels.push_back(int64_t(labels.size()));
    auto data = std::make_shared<ImageFiles>(many, labels, channels);
    for (const char* params : {"{size: 24, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}",
                               "{size: [20, 28], scale: [0.9, 1.0], ratio: [0.2, 5.0]}",  // edges, centre fallback
                               "{size: 224, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}"}) {
      auto rrc = transform("random_resized_crop", params);
      auto flip = transform("random_horizontal_flip", "{p: 0.5}");
      auto tt = transform("to_tensor", "{}");
      Compose fast({rrc, flip, tt}), slow({std::make_shared<Plain>(rrc), flip, tt});
      LoaderOptions o;
      o.batch_size = 5;
      o.workers = 2;
      o.shard.seed = 3;
      DataLoader a(data, fast, o), b(data, slow, o);
      for (int64_t e : {0, 1}) {
        auto fa = load_epoch(a, e), sb = load_epoch(b, e);
        ASSERT_EQ(fa.size(), sb.size());
        for (std::size_t k = 0; k < fa.size(); ++k) {
          EXPECT_TRUE(fa[k].inputs.equal(sb[k].inputs)) << params << " channels " << channels << " epoch " << e << " batch " << k;
          EXPECT_TRUE(fa[k].targets.equal(sb[k].targets));
        }
      }
    }
  }
}

}  // namespace
}  // namespace trainrun
