// Shared by the gpu-labelled tests (tests/gpu/): small generated data sets, so that they need
// nothing installed on the GPU machine beyond trainrun's build, and the recipe lines they share.
#pragma once

#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>

#include <cstdlib>
#include <random>
#include <string>

namespace trainrun::test {

// An MNIST folder (IDX files) of `train` + `eval` random 28x28 images, label i % 10: what
// recipes/quickstart.yaml's BasicNet trains on when data.dataset.root points here.
inline void write_random_mnist(const std::string& dir, int train, int eval, uint32_t seed = 1) {
  auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16 & 255), char(v >> 8 & 255), char(v & 255)};
  };
  std::mt19937 rng(seed);
  auto split = [&](const std::string& prefix, int n) {
    std::string images = be32(0x803) + be32(uint32_t(n)) + be32(28) + be32(28), labels = be32(0x801) + be32(uint32_t(n));
    for (int i = 0; i < n; ++i) {
      for (int p = 0; p < 784; ++p) images += char(rng() & 255);
      labels += char(i % 10);
    }
    write_file(dir + "/" + prefix + "-images-idx3-ubyte", images);
    write_file(dir + "/" + prefix + "-labels-idx1-ubyte", labels);
  };
  split("train", train);
  split("t10k", eval);
}

// quickstart.yaml (BasicNet, AdamW, nll) on write_random_mnist(root), one process on CUDA.
inline std::string quickstart_on_cuda(const std::string& root, const std::string& out) {
  return source("recipes/quickstart.yaml") + " data.dataset.root=" + root +
         " world.device=cuda world.nproc_per_node=1 world.master_port=0 output.dir=" + out + " ";
}

// Three classes of RGB PNGs of several sizes under dir/{train,val}/{cat,dog,owl}/.
inline void write_rgb_folder(const std::string& dir) {
  torch::manual_seed(5);
  int i = 0;
  for (const std::string cls : {"cat", "dog", "owl"})
    for (const std::string split : {"train", "val"})
      for (int k = 0; k < (split == "train" ? 8 : 2); ++k, ++i) {
        std::filesystem::create_directories(dir + "/" + split + "/" + cls);  // cv::imwrite makes no folders
        write_image(dir + "/" + split + "/" + cls + "/" + std::to_string(k) + ".png",
                    torch::randint(0, 256, {40 + 7 * (i % 5), 50 + 3 * (i % 4), 3}, torch::kUInt8));
      }
}

// The python3 whose torch the references come from: $TRAINRUN_PYTHON, else the first on PATH (on a
// GPU machine usually a venv's with a CUDA wheel, not /usr/bin's).
inline std::string gpu_python() {
  const char* p = std::getenv("TRAINRUN_PYTHON");
  return p && *p ? p : "python3";
}

// Why python3's torch cannot give a CUDA reference here, or "" when it can.
inline std::string python_cuda_missing() {
  RunResult r = run(gpu_python() + " -c 'import torch; assert torch.cuda.is_available(), torch.__version__'");
  return r.code == 0 ? "" : gpu_python() + " has no torch with CUDA: " + r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
}

}  // namespace trainrun::test
