// Recipe inheritance: `base: FILE` or `base: [FILE, ...]` merged as OmegaConf.merge(base...,
// file) merges (and Hydra's defaults list composes): mappings key by key, recursively; anything
// else (a scalar, a list, null, a mapping where a scalar was) replaced whole. A merged recipe
// mixes nodes of several files, so where each node was written is kept beside it: an error, a
// ${recipe_dir} and `trainrun check --origin` name the file the value came from.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

namespace trainrun {

// Where the nodes of a recipe read from files were written. A node is known by identity
// (yaml-cpp's Node::is), which survives the loader's checks: they move nodes, never copy them.
class RecipeSources {
 public:
  // Every node of `root` (keys, values, the mappings and lists themselves), read from `file`.
  void add_file(const YAML::Node& root, const std::string& file);
  // `made` stands for what `from` was (a mapping the loader made from a node of the file).
  void add_alias(const YAML::Node& made, const YAML::Node& from);
  // "FILE:LINE:COL" where `node` was written; "" for a node no file wrote (a default, an override).
  std::string where(const YAML::Node& node) const;
  // The file `node` was read from; "" when none.
  std::string file_of(const YAML::Node& node) const;
  // The one file holding a node at `mark` (a yaml-cpp exception's); "" when none or several do.
  std::string file_at(const YAML::Mark& mark) const;

 private:
  struct Entry {
    YAML::Node node;
    std::string file;
    YAML::Mark mark;
  };
  void add(const YAML::Node& node, const std::string& file, const YAML::Mark& mark);
  const Entry* find(const YAML::Node& node) const;
  std::vector<Entry> entries_;
};

// The command-line override (`overrides` maps each overridden dotted path to its text) that set
// `path` or a section holding it; nullptr when none did.
const std::string* override_of(const std::map<std::string, std::string>& overrides, const std::string& path);

// Where a value of a loaded recipe came from: "FILE:LINE:COL", "command line 'k=v'" (`overrides`
// maps each overridden dotted path to its text), or "" when neither wrote it (a default).
std::string written_at(const RecipeSources& sources, const std::map<std::string, std::string>& overrides,
                       const std::string& path, const YAML::Node& node);

struct RecipeFiles {
  YAML::Node root;  // the merged recipe: a mapping, no `base` key left
  RecipeSources sources;
};

// `file` with its bases merged in: each base (depth-first, itself merged with its own bases) in
// the order listed, later ones winning, then the file's own keys. Base paths are relative to the
// folder of the file naming them. RecipeError for an unreadable or malformed file, a bad `base`
// entry and a cycle (`a.yaml -> b.yaml -> a.yaml`), naming the file and line.
RecipeFiles read_recipe_files(const std::string& file);

// The OmegaConf.merge of two recipe trees (at dotted `path`): `over` wins; mappings merge
// recursively, in `under`'s key order with `over`'s new keys after; nodes are moved, not copied.
// A merged mapping is recorded in `sources` as written where `over`'s was. A list over a mapping
// or a mapping over a list is a RecipeError, as OmegaConf's ConfigTypeError.
YAML::Node merge_recipe_trees(const YAML::Node& under, const YAML::Node& over, RecipeSources& sources,
                              const std::string& path = "");

}  // namespace trainrun
