// Peak memory and step time of a training step with and without train.activation_checkpointing
// (runner/train/activation_checkpointing.h): forward, cross-entropy, backward and an SGD step of a
// registered model on random data, as the trainer runs it (memory_format channels_last where the
// model prefers it, as `auto` picks). One configuration per process, so each peak RSS is its own:
// bench/activation_checkpointing.sh runs both and compares.
//
// usage: build/bench/activation_checkpointing MODEL BATCH THREADS STEPS none|true|STAGE,STAGE [contiguous]
// prints one JSON line: the median and min step time, the peak RSS of the process (getrusage's
// ru_maxrss) and its RSS before the first step (model, optimizer, input).
#include "components/models/model.h"
#include "runner/train/activation_checkpointing.h"

#include <torch/torch.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

double current_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainrun;
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s MODEL BATCH THREADS STEPS none|true|STAGE,STAGE [contiguous]\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1], which = argv[5];
  const int64_t batch = std::stoll(argv[2]);
  const int threads = std::stoi(argv[3]), steps = std::stoi(argv[4]);
  const bool contiguous = argc > 6 && std::string(argv[6]) == "contiguous";
  at::set_num_threads(threads);
  torch::manual_seed(0);

  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg(YAML::NodeType::Map);
  for (auto& p : entry.schema.params()) cfg[p.name] = YAML::Clone(p.default_value);
  cfg["num_classes"] = 1000;
  auto model = entry.make(Config(cfg, "model"));
  const bool channels_last = !contiguous && model->prefers_channels_last();
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  std::vector<std::string> stages = which == "true" ? model->checkpoint_stages()
                                    : which == "none" ? std::vector<std::string>{}
                                                      : split(which);
  set_activation_checkpointing(*model, stages);
  model->train();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto size = model->input_config().input_size;
  at::Tensor x = torch::randn({batch, size[0], size[1], size[2]});
  if (channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor y = torch::randint(0, 1000, {batch});
  const double before = current_rss_mib();

  std::vector<double> times;
  for (int i = 0; i < steps + 1; ++i) {  // the first warms up the allocator and oneDNN's kernels
    auto start = std::chrono::steady_clock::now();
    sgd.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    sgd.step();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= 1) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  std::string joined;
  for (const auto& s : stages) joined += (joined.empty() ? "" : ",") + s;
  std::printf("{\"model\": \"%s\", \"batch\": %lld, \"threads\": %d, \"memory_format\": \"%s\", "
              "\"activation_checkpointing\": \"%s\", \"steps\": %d, \"median_s\": %.2f, \"min_s\": %.2f, "
              "\"rss_before_mib\": %.0f, \"peak_rss_mib\": %.0f}\n",
              name.c_str(), static_cast<long long>(batch), threads, channels_last ? "channels_last" : "contiguous",
              joined.c_str(), steps, times[times.size() / 2], times.front(), before, peak_rss_mib());
}
