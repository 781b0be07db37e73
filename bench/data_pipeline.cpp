// Input pipeline speed against torchvision's: decode + random_resized_crop(224) + to_tensor +
// normalize of Oxford-pets-sized JPEGs (500x375) through our DataLoader and through
// torch.utils.data.DataLoader (bench/data_pipeline.py, run here with /usr/bin/python3) with the
// same number of workers and batch size, on the same files; prints both rates and the ratio.
// Each side reports the best of EPOCHS timed epochs after a warm-up epoch.
//
// usage: build/bench/data_pipeline [--augment] [WORKERS=2] [BATCH=32] [IMAGES=400] [EPOCHS=3] [FOLDER]
// --augment adds the timm-style training augmentation of recipes/pets_resnet50d_augmented.yaml on
// both sides: horizontal flip, RandAugment(2, 9) before to_tensor and RandomErasing(0.25, random)
// after normalize.
//        build/bench/data_pipeline --stages [IMAGES=400] [FOLDER]
// FOLDER (default: a fresh temp folder) is filled with IMAGES JPEGs in 4 class folders unless
// it already holds them. --stages times our steps one by one on one thread instead (ms per
// image): the region decode, the full decode it replaces, the resize, to_tensor + normalize,
// and the stacking a batch would cost; and the region decode of a 1x1 box in the last corner,
// which is nearly all entropy decoding (every row down to the box's must be entropy-decoded).
#include "bench/photos.h"
#include "components/data/image.h"
#include "components/data/loader/loader.h"
#include "components/data/sources/image_files.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace fs = std::filesystem;
using namespace trainrun;
using bench::make_transform;
using bench::write_photos;

std::vector<std::string> list_photos(const fs::path& dir, std::vector<int64_t>* labels) {
  std::vector<std::string> paths;
  for (int64_t c = 0; c < 4; ++c)
    for (auto& e : fs::directory_iterator(dir / ("class" + std::to_string(c)))) {
      paths.push_back(e.path().string());
      if (labels) labels->push_back(c);
    }
  return paths;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int stages(int64_t count, const fs::path& dir) {
  write_photos(dir, count);
  auto paths = list_photos(dir, nullptr);
  auto rrc = make_transform("random_resized_crop", "{size: 224, scale: [0.08, 1.0], ratio: [0.75, 1.3333333333333333]}");
  Compose tail({make_transform("to_tensor", "{}"), make_transform("normalize", "{mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}")});
  double region = 0, full = 0, resize = 0, tensor = 0, stack = 0, corner = 0;
  std::vector<at::Tensor> batch;
  const int reps = 3;
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t i = 0; i < paths.size(); ++i) {
      Rng rng(i + rep * paths.size());
      auto t = std::chrono::steady_clock::now();
      at::Tensor crop = decode_image_region(paths[i], 3, [&](int64_t h, int64_t w) { return rrc->crop_box(h, w, rng); });
      region += ms_since(t);
      t = std::chrono::steady_clock::now();
      decode_image(paths[i], 3);
      full += ms_since(t);
      t = std::chrono::steady_clock::now();
      at::Tensor resized = rrc->after_crop(crop, rng);
      resize += ms_since(t);
      t = std::chrono::steady_clock::now();
      batch.push_back(tail(resized, rng));
      tensor += ms_since(t);
      if (batch.size() == 32 || i + 1 == paths.size()) {
        t = std::chrono::steady_clock::now();
        at::stack(batch);
        stack += ms_since(t);
        batch.clear();
      }
      t = std::chrono::steady_clock::now();
      decode_image_region(paths[i], 3, [](int64_t h, int64_t w) { return CropBox{h - 1, w - 1, 1, 1}; });
      corner += ms_since(t);
    }
  double n = double(reps * paths.size());
  std::printf("ms per image, one thread, %zu JPEGs 500x375: region decode %.3f, full decode %.3f, resize %.3f, "
              "to_tensor+normalize %.3f, stack %.3f; 1x1 box in the last corner %.3f\n",
              paths.size(), region / n, full / n, resize / n, tensor / n, stack / n, corner / n);
  return 0;
}

int main(int argc, char** argv) {
  const bool augment = argc > 1 && std::string(argv[1]) == "--augment";
  if (augment) --argc, ++argv;
  if (argc > 1 && std::string(argv[1]) == "--stages")
    return stages(argc > 2 ? std::stoll(argv[2]) : 400,
                  argc > 3 ? fs::path(argv[3]) : fs::temp_directory_path() / "trainrun-bench-data");
  int64_t workers = argc > 1 ? std::stoll(argv[1]) : 2;
  int64_t batch = argc > 2 ? std::stoll(argv[2]) : 32;
  int64_t count = argc > 3 ? std::stoll(argv[3]) : 400;
  int64_t epochs = argc > 4 ? std::stoll(argv[4]) : 3;
  fs::path dir = argc > 5 ? fs::path(argv[5]) : fs::temp_directory_path() / "trainrun-bench-data";
  write_photos(dir, count);

  std::vector<int64_t> labels;
  std::vector<std::string> paths = list_photos(dir, &labels);
  auto data = std::make_shared<ImageFiles>(paths, labels, 3);
  std::vector<std::shared_ptr<Transform>> steps = {
      make_transform("random_resized_crop", "{size: 224, scale: [0.08, 1.0], ratio: [0.75, 1.3333333333333333]}")};
  if (augment) {
    steps.push_back(make_transform("random_horizontal_flip", "{p: 0.5}"));
    steps.push_back(make_transform("rand_augment", "{num_ops: 2, magnitude: 9, num_magnitude_bins: 31, fill: null}"));
  }
  steps.push_back(make_transform("to_tensor", "{}"));
  steps.push_back(make_transform("normalize", "{mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}"));
  if (augment) steps.push_back(make_transform("random_erasing", "{p: 0.25, scale: [0.02, 0.33], ratio: [0.3, 3.3], value: random}"));
  Compose t(steps);
  LoaderOptions o;
  o.batch_size = batch;
  o.workers = workers;
  DataLoader loader(data, t, o);
  double best = 0;
  for (int64_t epoch = 0; epoch <= epochs; ++epoch) {
    auto start = std::chrono::steady_clock::now();
    int64_t n = 0;
    loader.start_epoch(epoch);
    while (auto b = loader.next()) n += b->inputs.size(0);
    double rate = double(n) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (epoch > 0) best = std::max(best, rate);  // as the Python side: the first epoch warms up
  }
  std::printf("trainrun: %.1f images/s (%zu JPEGs 500x375, workers %lld, batch %lld%s)\n", best, paths.size(),
              (long long)workers, (long long)batch, augment ? ", + flip, RandAugment(2, 9), RandomErasing(0.25)" : "");
  std::fflush(stdout);

  std::string cmd = "/usr/bin/python3 " + std::string(TRAINRUN_SOURCE_DIR) + "/bench/data_pipeline.py " + dir.string() + " " +
                    std::to_string(workers) + " " + std::to_string(batch) + " " + std::to_string(epochs) + (augment ? " augment" : "");
  FILE* p = ::popen(cmd.c_str(), "r");
  char line[256] = {0};
  double theirs = 0;
  while (p && std::fgets(line, sizeof line, p)) std::sscanf(line, "torchvision: %lf", &theirs);
  if (!p || ::pclose(p) != 0 || theirs <= 0) {
    std::fprintf(stderr, "bench/data_pipeline.py failed (is python3-torchvision installed?)\n");
    return 1;
  }
  std::printf("torchvision: %.1f images/s\nratio: %.2fx\n", theirs, best / theirs);
  return 0;
}
