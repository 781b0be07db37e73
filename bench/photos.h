// What the input benchmarks (data_pipeline, shard_input) read and apply: Oxford-pets-sized JPEG
// "photos" (500x375) in 4 class folders, tiny PNGs for the start-up timings, and transforms built
// as a recipe's list builds them.
#pragma once

#include "components/data/image.h"
#include "components/data/transform.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace trainrun::bench {

namespace fs = std::filesystem;

// DIR/class{i % 4}/img_{i}.jpg for i < count, those already there kept. Smooth random colour
// fields with a little noise: they compress like a photo (~30-40 kB).
inline void write_photos(const std::filesystem::path& dir, int64_t count) {
  torch::manual_seed(0);
  for (int64_t i = 0; i < count; ++i) {
    std::filesystem::path file = dir / ("class" + std::to_string(i % 4)) / ("img_" + std::to_string(i) + ".jpg");
    if (std::filesystem::exists(file)) continue;
    std::filesystem::create_directories(file.parent_path());
    at::Tensor coarse = torch::rand({1, 3, 6, 8}) * 255;
    at::Tensor img = torch::nn::functional::interpolate(
        coarse, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{375, 500}).mode(torch::kBicubic).align_corners(false));
    img = (img[0].permute({1, 2, 0}) + torch::randn({375, 500, 3}) * 8).clamp(0, 255).to(torch::kUInt8).contiguous();
    write_image(file.string(), img);
  }
}

// One registered transform from its YAML parameters: make_transform("normalize", "{mean: ..., std: ...}").
inline std::shared_ptr<Transform> make_transform(const std::string& name, const std::string& params) {
  return Registry<Transform>::instance().get(name).make(Config(YAML::Load(params), name), ModelInput{});
}

// The 4 class folders of a photo folder.
inline std::vector<fs::path> class_dirs(const fs::path& root) {
  std::vector<fs::path> out;
  for (int c = 0; c < 4; ++c) out.push_back(root / ("class" + std::to_string(c)));
  return out;
}

// N tiny PNGs (16x16 noise) in 4 class folders, written once; `n` of them hard-linked into folder-n.
inline void write_tiny(const fs::path& dir, int64_t count) {
  const fs::path all = dir / ("folder-" + std::to_string(count)), done = dir / ("folder-" + std::to_string(count) + ".complete");
  if (!fs::exists(done)) {
    std::printf("writing %lld PNGs into %s\n", (long long)count, all.c_str());
    std::fflush(stdout);
    torch::manual_seed(0);
    for (const auto& d : class_dirs(all)) fs::create_directories(d);
    for (int64_t i = 0; i < count; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "img_%06lld.png", (long long)i);
      write_image((all / ("class" + std::to_string(i % 4)) / name).string(), torch::randint(0, 256, {16, 16, 3}, torch::kUInt8));
    }
    std::ofstream(done) << count << "\n";
  }
  for (int64_t n = 1000; n < count; n *= 10) {
    const fs::path part = dir / ("folder-" + std::to_string(n));
    if (fs::exists(part)) continue;
    const fs::path tmp = part.string() + ".partial";
    fs::remove_all(tmp);
    for (int64_t i = 0; i < n; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "img_%06lld.png", (long long)i);
      const fs::path rel = fs::path("class" + std::to_string(i % 4)) / name;
      fs::create_directories((tmp / rel).parent_path());
      fs::create_hard_link(all / rel, tmp / rel);
    }
    fs::rename(tmp, part);
  }
  if (!fs::exists(dir / "val")) {
    for (int64_t c = 0; c < 4; ++c) {
      fs::create_directories(dir / "val" / ("class" + std::to_string(c)));
      fs::create_hard_link(all / ("class" + std::to_string(c)) / ("img_00000" + std::to_string(c) + ".png"),
                           dir / "val" / ("class" + std::to_string(c)) / "img_0.png");
    }
  }
}

}  // namespace trainrun::bench
