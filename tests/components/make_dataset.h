#pragma once
// A dataset built through the registry, as a recipe's data.dataset section builds it; an epoch
// of a loader's batches.
#include "components/data/dataset.h"
#include "components/data/loader/loader.h"
#include "registry/registry.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace trainrun::test {

// Every batch of epoch `e`, in order.
inline std::vector<Batch> load_epoch(DataLoader& loader, int64_t e) {
  std::vector<Batch> out;
  loader.start_epoch(e);
  while (auto b = loader.next()) out.push_back(*b);
  return out;
}

inline DatasetSplits make_dataset(const std::string& name, const std::string& params) {
  return Registry<Dataset>::instance().get(name).make(Config(YAML::Load(params), "data.dataset"));
}

}  // namespace trainrun::test
