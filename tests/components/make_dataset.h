#pragma once
// A dataset built through the registry, as a recipe's data.dataset section builds it; an epoch
// of a loader's batches; transforms built as a recipe names them; a small picture to decode; a
// section with its schema's defaults.
#include "components/data/dataset.h"
#include "components/data/loader/loader.h"
#include "components/data/transform.h"
#include "registry/registry.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trainrun::test {

// A loader's options: `batch_size` a batch, `workers` threads, the sampler seeded with `seed`.
inline LoaderOptions loader_options(int64_t batch_size, int64_t workers, uint64_t seed) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.workers = workers;
  o.shard.seed = seed;
  return o;
}

// Every batch of epoch `e`, in order.
inline std::vector<Batch> load_epoch(DataLoader& loader, int64_t e) {
  std::vector<Batch> out;
  loader.start_epoch(e);
  while (auto b = loader.next()) out.push_back(*b);
  return out;
}

// `node` with the schema's defaults for the keys it lacks, as the recipe engine fills a section.
inline YAML::Node with_defaults(const Schema& schema, YAML::Node node) {
  for (const auto& p : schema.params())
    if (!node[p.name]) node[p.name] = YAML::Clone(p.default_value);
  return node;
}

inline DatasetSplits make_dataset(const std::string& name, const std::string& params) {
  return Registry<Dataset>::instance().get(name).make(Config(YAML::Load(params), "data.dataset"));
}

inline std::shared_ptr<Transform> transform(const std::string& name, const std::string& params) {
  return Registry<Transform>::instance().get(name).make(Config(YAML::Load(params), name), ModelInput{});
}

inline Compose transforms(const std::vector<std::pair<std::string, std::string>>& steps) {
  std::vector<std::shared_ptr<Transform>> out;
  for (auto& [name, params] : steps) out.push_back(transform(name, params));
  return Compose(out);
}

// A small smooth RGB image, different for every seed.
inline at::Tensor picture(int64_t seed, int64_t h = 30, int64_t w = 40) {
  torch::manual_seed(seed);
  at::Tensor small = torch::rand({1, 3, 4, 5});
  at::Tensor big = torch::nn::functional::interpolate(
      small, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false));
  return (big[0] * 255).permute({1, 2, 0}).to(torch::kUInt8).contiguous();
}

}  // namespace trainrun::test
