// The recipe engine: YAML file + dotted overrides -> a validated tree with every default filled
// in and ${...} interpolated, after its bases are merged in (inherit.h). Errors name the file,
// line and column (or the override) at fault.
#pragma once

#include "registry/schema.h"
#include "runner/recipe/inherit.h"
#include "support/errors.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

struct Recipe {
  std::string file;
  YAML::Node root;
  RecipeSources sources;                         // which file (the recipe, a base) wrote each node
  std::map<std::string, std::string> overrides;  // dotted path -> the command-line override that set it

  Config section(const std::string& dotted_path) const;
  YAML::Node node(const std::string& dotted_path) const;
  // A key as errors about its value name it: "data.dataset.root (recipe.yaml:4:27)", with the
  // command-line override that set it instead of the file, or the key alone for a default.
  std::string key_at(const std::string& dotted_path) const;
  std::string dump() const;
};

Recipe load_recipe(const std::string& file, const std::vector<std::string>& overrides = {});

// A transform list made after loading (data.eval_transforms: model), checked against the
// transforms' schemas and completed with their defaults as a list written in the recipe is.
YAML::Node check_transform_list(const Recipe& recipe, const YAML::Node& list, const std::string& path);

// The fixed sections' schemas ("" = top level, data, train, output, world; "freeze[]" = one freeze
// rule), declared with their typed views in sections.cpp (world's in runner/distributed/world_config.cpp);
// the loader checks against them and `describe recipe/...` prints them. section_names() in recipe order.
const Schema& section_schema(const std::string& section);
std::vector<std::string> section_names();

}  // namespace trainrun
