// A registered model built as the recipe engine builds it: its schema's defaults, num_classes 1000
// unless `params` (YAML flow map) says otherwise.
#pragma once

#include "components/models/model.h"

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

namespace trainrun::test {

inline std::shared_ptr<Classifier> make_model(const std::string& name, const std::string& params = "{}") {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg = YAML::Load(params);
  for (auto& p : entry.schema.params())
    if (!cfg[p.name]) cfg[p.name] = p.name == "num_classes" ? YAML::Node(1000) : YAML::Clone(p.default_value);
  return entry.make(Config(cfg, "model"));
}

}  // namespace trainrun::test
