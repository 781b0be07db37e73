// One training step's forward + backward of a registered model on random data, timed; the
// PyTorch counterpart is bench/resnet_step.py (same model, batch, threads, loss).
//
// usage: build/bench/resnet_step [MODEL=resnet50d] [BATCH=8] [THREADS=2] [STEPS=5]
#include "components/models/model.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  using namespace trainrun;
  std::string name = argc > 1 ? argv[1] : "resnet50d";
  int64_t batch = argc > 2 ? std::stoll(argv[2]) : 8;
  int threads = argc > 3 ? std::stoi(argv[3]) : 2;
  int steps = argc > 4 ? std::stoi(argv[4]) : 5;
  at::set_num_threads(threads);
  torch::manual_seed(0);

  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg(YAML::NodeType::Map);
  for (auto& p : entry.schema.params()) cfg[p.name] = YAML::Clone(p.default_value);
  cfg["num_classes"] = 1000;
  auto model = entry.make(Config(cfg, "model"));
  model->train();
  auto size = model->input_config().input_size;
  at::Tensor x = torch::randn({batch, size[0], size[1], size[2]});
  at::Tensor y = torch::randint(0, 1000, {batch});

  std::vector<double> times;
  for (int i = 0; i < steps + 2; ++i) {  // the first two warm up the allocator and kernels
    model->zero_grad();
    auto start = std::chrono::steady_clock::now();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  std::printf("{\"impl\": \"trainrun (LibTorch C++)\", \"model\": \"%s\", \"batch\": %lld, \"threads\": %d, "
              "\"median_s\": %.3f, \"min_s\": %.3f}\n",
              name.c_str(), static_cast<long long>(batch), threads, times[times.size() / 2], times.front());
}
