// The command line's `key.path=value` overrides, applied to the merged recipe before it is
// checked (as Hydra's dotlist overrides an OmegaConf config). A path is written the way errors
// and `check --origin` print it, `data.train_transforms[1].normalize.mean`, or with a dotted index
// (`data.eval_transforms.1`); the value is YAML.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace trainrun {

// Sets the value `text` (`PATH=VALUE`) names in `root`, making missing sections; returns PATH as
// errors print it (`data.train_transforms[1].normalize.mean`). A list item written by name alone
// (`- normalize`) is opened as `normalize: {}`, as the loader reads it. RecipeError naming the
// override for a malformed one, an index outside its list, or a key under a plain value.
std::string apply_override(YAML::Node root, const std::string& text);

// Every key of the top level and the fixed sections, then of the components a recipe names (each
// registered entry's), as dotted paths (`seed`, `train.epochs`, `optimizer.lr`), leaving out those
// under `except` (the section being checked). With closest(..., by_last_part) a bare name finds
// its section: `epochs` -> `train.epochs`.
std::vector<std::string> recipe_key_paths(const std::string& except = "");

}  // namespace trainrun
