// What the input benchmarks (data_pipeline, shard_input) read and apply: Oxford-pets-sized JPEG
// "photos" (500x375) in 4 class folders, and transforms built as a recipe's list builds them.
#pragma once

#include "components/data/image.h"
#include "components/data/transform.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <string>

namespace trainrun::bench {

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

}  // namespace trainrun::bench
