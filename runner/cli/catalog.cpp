// `trainrun list [KIND]` and `trainrun describe KIND/NAME`: what the registries hold and each
// component's (or recipe section's) parameters, straight from their schemas.
#include "components/models/model.h"
#include "registry/registry.h"
#include "runner/cli/commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>

namespace trainrun::cli {
namespace {

void print_schema(const Schema& schema) {
  if (schema.params().empty()) std::cout << "  (no parameters)\n";
  for (auto& p : schema.params()) {
    std::string range = p.range_text();
    std::cout << "  " << p.name << "  (" << type_text(p) << ", default " << p.default_text()
              << (range.empty() ? "" : ", " + range) << ")\n      " << p.doc << "\n";
  }
}

// A model's pretrained config (timm's pretrained_cfg of the weights `pretrained: true` loads): what
// `eval_transforms: model` and `normalize: {mean: model}` take. The model is built with its
// defaults to ask it (a model's facts can depend on its options, e.g. a ViT's img_size).
std::string pretrained_config(const std::string& name) {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg(YAML::NodeType::Map);
  std::string head;  // the count depends on the head: say which one was counted (`check` counts the run's)
  for (auto& p : entry.schema.params()) {
    cfg[p.name] = p.name == "num_classes" ? YAML::Node(1000) : YAML::Clone(p.default_value);
    if (p.name == "num_classes") head = " with a 1000-class head";
  }
  torch::NoGradGuard no_grad;
  // The count and the config need no init values; without the init (timm's erfinv, most of a
  // build) one thread is enough: all 20 models in ~3.3 s on the 2-core VM, ~3.5 s on both cores.
  WithoutWeightInit counted_not_initialised;
  auto model = entry.make(Config(cfg, "model"));
  InputConfig in = model->input_config();
  std::string weights = model->published_weights().empty() ? "no published weights" : model->published_weights();
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  std::string eval = in.resize_and_crop ? fmt::format("{} crop_pct {}", in.interpolation, in.crop_pct) : "as is";
  return fmt::format("{} | {:.1f}M params{} | input {} {} | mean {} std {}", weights, double(params) / 1e6, head,
                     fmt::join(in.input_size, "x"), eval, in.mean, in.std);
}

}  // namespace

std::string type_text(const Param& p) {
  std::string type = type_name(p.type);
  for (auto& w : p.choices) type += " | " + w;
  return type;
}

int cmd_list(const std::string& kind) {
  bool found = false;
  for (auto& [name, view] : kinds()) {
    if (!kind.empty() && kind != name) continue;
    found = true;
    std::cout << name << ":\n";
    for (auto* e : view->entries()) {
      std::cout << "  " << e->name << std::string(e->name.size() < 22 ? 22 - e->name.size() : 1, ' ') << e->doc << "\n";
      // `list models` also says what each model's published weights expect (not `list`: building
      // every model takes a few seconds).
      if (kind == "models") std::cout << std::string(24, ' ') << pretrained_config(e->name) << "\n";
    }
  }
  if (!found) {
    std::vector<std::string> all;
    for (auto& [name, _] : kinds()) all.push_back(name);
    throw RecipeError("list: unknown kind '" + kind + "'" + did_you_mean(kind, all));
  }
  return kExitOk;
}

int cmd_describe(const std::string& what, const std::string& format, const std::string& output, const CLI::App& app) {
  if (format == "markdown") {
    if (!what.empty())
      throw RecipeError("describe --format markdown: writes every reference page; give no KIND/NAME (got '" + what + "')");
    if (output.empty())
      throw RecipeError("describe --format markdown: needs --output DIR, the folder to write the reference pages to");
    return write_reference(app, output);
  }
  if (!output.empty()) throw RecipeError("describe: --output DIR is for --format markdown");
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
    return kExitOk;
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
  if (it->first == "models") std::cout << "  pretrained config: " << pretrained_config(e->name) << "\n";
  print_schema(e->schema);
  return kExitOk;
}

}  // namespace trainrun::cli
