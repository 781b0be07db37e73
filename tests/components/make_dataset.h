#pragma once
// A dataset built through the registry, as a recipe's data.dataset section builds it.
#include "components/data/dataset.h"
#include "registry/registry.h"

#include <yaml-cpp/yaml.h>

#include <string>

namespace trainrun::test {

inline DatasetSplits make_dataset(const std::string& name, const std::string& params) {
  return Registry<Dataset>::instance().get(name).make(Config(YAML::Load(params), "data.dataset"));
}

}  // namespace trainrun::test
