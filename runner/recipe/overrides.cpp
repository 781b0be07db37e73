// Command-line overrides (overrides.h): walking a `key.path[i].key` into the recipe tree, and the
// keys a misplaced bare name may mean.
#include "runner/recipe/overrides.h"

#include "registry/registry.h"
#include "runner/recipe/recipe.h"
#include "support/errors.h"

#include <algorithm>
#include <cstdlib>

namespace trainrun {

namespace {

using YAML::Node;

// One step of a path: a key, or an index (`[1]`, or `.1` under a list).
struct PathStep {
  std::string key;
  long index = -1;  // >= 0: `[index]`
};

// `a.b[1].c` -> a, b, [1], c; empty when the path is malformed.
std::vector<PathStep> path_steps(const std::string& path) {
  std::vector<PathStep> out;
  std::size_t at = 0;
  while (at < path.size()) {
    if (path[at] == '[') {
      char* stop = nullptr;
      const long index = std::strtol(path.c_str() + at + 1, &stop, 10);
      if (out.empty() || stop == path.c_str() + at + 1 || *stop != ']' || index < 0) return {};
      out.push_back({"", index});
      at = std::size_t(stop - path.c_str()) + 1;
      if (at < path.size() && path[at] != '.' && path[at] != '[') return {};
    } else {
      const std::size_t end = std::min(path.find_first_of(".[", at), path.size());
      if (end == at) return {};
      out.push_back({path.substr(at, end - at)});
      at = end;
    }
    if (at < path.size() && path[at] == '.' && ++at == path.size()) return {};  // a trailing dot
  }
  return out;
}

// The index `step` means under a list: `[1]`, or `.1` written as a key.
long list_index(const PathStep& step) {
  if (step.index >= 0) return step.index;
  char* end = nullptr;
  const long i = std::strtol(step.key.c_str(), &end, 10);
  return *end || step.key.empty() ? -1 : i;
}

}  // namespace

std::string apply_override(Node root, const std::string& text) {
  const auto eq = text.find('=');
  const std::string at = "command line '" + text + "': ";
  if (eq == std::string::npos || eq == 0) throw RecipeError(at + "expected key.path=value (e.g. optimizer.lr=3e-4)");
  const std::string path = text.substr(0, eq);
  if (path == "base" || path.rfind("base.", 0) == 0)
    throw RecipeError(at + "base: the bases are merged before the overrides; write base: in a recipe file");
  Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw RecipeError(at + "value is not valid YAML: " + e.msg);
  }
  const std::vector<PathStep> steps = path_steps(path);
  if (steps.empty()) throw RecipeError(at + "'" + path + "' is not a key path (e.g. optimizer.lr, data.train_transforms[1].normalize.mean)");
  Node cur = root;
  std::string walked;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PathStep& s = steps[i];
    const bool last = i + 1 == steps.size();
    if (cur.IsSequence()) {
      const long index = list_index(s);
      const std::string item = walked + "[" + (index >= 0 ? std::to_string(index) : s.key) + "]";
      if (index < 0 || std::size_t(index) >= cur.size())
        throw RecipeError(at + item + ": no such item; " + walked + " has " + std::to_string(cur.size()) +
                          (cur.size() ? " (0 to " + std::to_string(cur.size() - 1) + ")" : ""));
      walked = item;
      if (last) cur[std::size_t(index)] = value;
      else cur.reset(cur[std::size_t(index)]);
      continue;
    }
    if (s.index >= 0) throw RecipeError(at + walked + " is not a list");
    if (cur.IsScalar() && cur.Scalar() == s.key) {  // `- normalize` is `- normalize: {}`
      Node opened(YAML::NodeType::Map);
      opened[s.key] = Node(YAML::NodeType::Map);
      cur = opened;  // writes through: the list item becomes the mapping
    }
    if (!cur.IsMap() && !cur.IsNull()) throw RecipeError(at + walked + " is a value, not a section");
    walked += (walked.empty() ? "" : ".") + s.key;
    if (last) cur[s.key] = value;
    else {
      if (!cur[s.key]) cur[s.key] = Node(YAML::NodeType::Map);
      cur.reset(cur[s.key]);
    }
  }
  return walked;
}

std::vector<std::string> recipe_key_paths(const std::string& except) {
  static const std::pair<const char*, const char*> components[] = {
      {"model", "models"}, {"data.dataset", "datasets"}, {"optimizer", "optimizers"},
      {"scheduler", "schedulers"}, {"train.loss", "losses"}};
  std::vector<std::string> keys;
  auto add = [&](const std::string& section, const Schema& schema) {
    for (const std::string& key : schema.names()) {
      const std::string full = section.empty() ? key : section + "." + key;
      if (!except.empty() && (full.rfind(except + ".", 0) == 0 || full == except)) continue;
      if (std::find(keys.begin(), keys.end(), full) == keys.end()) keys.push_back(full);
    }
  };
  add("", section_schema(""));
  for (const std::string& section : section_names()) add(section, section_schema(section));
  for (const auto& [section, kind] : components) {
    auto it = kinds().find(kind);
    if (it == kinds().end()) continue;
    for (const EntryInfo* entry : it->second->entries()) add(section, entry->schema);
  }
  return keys;
}

}  // namespace trainrun
