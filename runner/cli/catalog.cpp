// `trainrun list [KIND]` and `trainrun describe KIND/NAME`: what the registries hold and each
// component's (or recipe section's) parameters, straight from their schemas.
#include "registry/registry.h"
#include "runner/cli/commands.h"

#include <algorithm>
#include <iostream>

namespace trainrun::cli {
namespace {

void print_schema(const Schema& schema) {
  if (schema.params().empty()) std::cout << "  (no parameters)\n";
  for (auto& p : schema.params()) {
    std::string type = type_name(p.type);
    for (auto& w : p.choices) type += " | " + w;
    std::string range = p.range_text();
    std::cout << "  " << p.name << "  (" << type << ", default " << p.default_text()
              << (range.empty() ? "" : ", " + range) << ")\n      " << p.doc << "\n";
  }
}

}  // namespace

int cmd_list(const std::string& kind) {
  bool found = false;
  for (auto& [name, view] : kinds()) {
    if (!kind.empty() && kind != name) continue;
    found = true;
    std::cout << name << ":\n";
    for (auto* e : view->entries()) std::cout << "  " << e->name << std::string(e->name.size() < 18 ? 18 - e->name.size() : 1, ' ') << e->doc << "\n";
  }
  if (!found) {
    std::vector<std::string> all;
    for (auto& [name, _] : kinds()) all.push_back(name);
    throw RecipeError("list: unknown kind '" + kind + "'" + did_you_mean(kind, all));
  }
  return 0;
}

int cmd_describe(const std::string& what) {
  auto slash = what.find('/');
  std::string kind = what.substr(0, slash), name = slash == std::string::npos ? "" : what.substr(slash + 1);
  if (kind == "recipe") {
    std::string section = name == "top" ? "" : name;
    auto sections = section_names();
    if (section != "" && std::find(sections.begin(), sections.end(), section) == sections.end()) {
      std::string all = "top";
      for (auto& s : sections) all += ", " + s;
      throw RecipeError("describe: unknown recipe section '" + name + "' (one of: " + all + ")");
    }
    std::cout << "recipe/" << (name.empty() ? "top" : name) << "\n";
    print_schema(section_schema(section));
    return 0;
  }
  auto it = kinds().find(kind);
  if (it == kinds().end() && kinds().count(kind + "s")) it = kinds().find(kind + "s");
  if (it == kinds().end() || name.empty())
    throw RecipeError("describe: expected KIND/NAME such as models/basicnet or optimizers/adamw, got '" + what + "'");
  const EntryInfo* e = it->second->find(name);
  if (!e) {
    throw RecipeError("describe: no " + it->first + "/" + name + did_you_mean(name, it->second->names()));
  }
  std::cout << it->first << "/" << e->name << ": " << e->doc << "\n";
  print_schema(e->schema);
  return 0;
}

}  // namespace trainrun::cli
