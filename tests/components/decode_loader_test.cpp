// Decoding (PIL's luma, the pixel limit, the formats that reach the decoders, JPEG regions) and
// the loader's determinism, in-place batches and sharding. The dataset sources: data_test.cpp.
// Every fixture is written by the test itself.
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
using test::picture;
using test::transform;
using test::transforms;

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
    return {torch::full({20, 20, 3}, int64_t(i % 256), torch::kUInt8), int64_t(i), {}};
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
      return {torch::randint(0, 256, {20, 24, 3}, g, torch::kUInt8), int64_t(i), {}};
    }
  };
  auto noisy = std::make_shared<Noisy>(37);
  std::vector<std::vector<Batch>> runs;
  for (int64_t workers : {0, 1, 3}) {
    LoaderOptions o = test::loader_options(5, workers, 11);
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
      return {torch::randint(0, 256, {20, 24, 3}, g, torch::kUInt8), int64_t(i), {}};
    }
  };
  auto data = std::make_shared<NoisyWithHoles>(41);
  auto rrc = transform("random_resized_crop", "{size: 12, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}");
  auto flip = transform("random_horizontal_flip", "{p: 0.5}");
  auto tt = transform("to_tensor", "{}");
  auto norm = transform("normalize", "{mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}");
  for (int64_t workers : {0, 2}) {
    LoaderOptions o = test::loader_options(6, workers, 5);
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
      LoaderOptions o = test::loader_options(5, 2, 3);
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
