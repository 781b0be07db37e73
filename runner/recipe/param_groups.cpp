#include "runner/recipe/param_groups.h"

#include <fnmatch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <set>

namespace trainrun {

namespace {

// timm's group_with_matcher(..., reverse=True) for a dict matcher (timm/models/_manipulate.py):
// each name's ordinal tuple is (group ordinal, captured numbers..., suffix...) of the first rule
// matching at its start, (inf,) when none does; walking the sorted distinct tuples, each starts a
// new layer id unless it ends in MATCH_PREV_GROUP (99999), which joins the layer before.
LayerIds matched_layer_ids(const std::vector<std::string>& names, const std::vector<GroupRule>& matcher) {
  constexpr double kMatchPrevGroup = 99999;
  std::vector<std::regex> compiled;
  std::vector<double> group_ordinal;  // timm: enumerate(group_matcher.items())
  std::vector<std::string> groups;
  for (const auto& rule : matcher) {
    compiled.emplace_back(rule.regex, std::regex::ECMAScript);
    auto it = std::find(groups.begin(), groups.end(), rule.group);
    if (it == groups.end()) it = groups.insert(groups.end(), rule.group);
    group_ordinal.push_back(double(it - groups.begin()));
  }
  std::map<std::string, std::vector<double>> ordinal;
  std::set<std::vector<double>> keys;
  for (const auto& name : names) {
    std::vector<double> key{std::numeric_limits<double>::infinity()};
    for (std::size_t g = 0; g < compiled.size(); ++g) {
      std::smatch m;
      if (!std::regex_search(name, m, compiled[g], std::regex_constants::match_continuous)) continue;
      key = {group_ordinal[g]};
      for (std::size_t i = 1; i < m.size(); ++i)
        if (m[i].matched) key.push_back(std::stod(m[i].str()));
      key.insert(key.end(), matcher[g].suffix.begin(), matcher[g].suffix.end());
      break;
    }
    ordinal[name] = key;
    keys.insert(key);
  }
  std::map<std::vector<double>, int64_t> id;
  int64_t layer = -1;
  for (const auto& k : keys) {
    if (layer < 0 || k.back() != kMatchPrevGroup) ++layer;
    id.emplace(k, layer);
  }
  auto of = [ordinal, id, layer](const std::string& name) {
    auto it = ordinal.find(name);
    return it == ordinal.end() ? layer : id.at(it->second);  // timm: layer_map.get(name, layer_max)
  };
  return {of, layer + 1};
}

// timm's auto_group_layers(model, layers_per_group=12): the non-classifier parameter tensors in
// chunks of 12, then the classifier.
LayerIds automatic_layer_ids(const std::vector<std::string>& names, const std::string& classifier) {
  std::map<std::string, int64_t> layer;
  std::vector<std::string> head;
  int64_t trunk = 0;
  for (const auto& name : names) {
    if (fnmatch(classifier.c_str(), name.c_str(), 0) == 0) head.push_back(name);
    else layer[name] = trunk++ / 12;
  }
  const int64_t groups = (trunk + 11) / 12;
  for (const auto& name : head) layer[name] = groups;
  auto of = [layer, groups](const std::string& name) {
    auto it = layer.find(name);
    return it == layer.end() ? groups : it->second;
  };
  return {of, groups + 1};
}

// The lr_scale of the freeze rule that makes `name` trainable: the last rule matching it among
// those in effect at the first epoch it trains (1 when it never does).
double freeze_lr_scale(const std::vector<FreezeRule>& rules, const std::string& name) {
  std::set<int64_t> epochs{0};
  for (const auto& r : rules) epochs.insert(r.from_epoch);
  for (int64_t epoch : epochs) {
    const FreezeRule* last = nullptr;
    for (const auto& r : rules)
      if (r.from_epoch <= epoch && fnmatch(r.params.c_str(), name.c_str(), 0) == 0) last = &r;
    if (last && last->trainable) return last->lr_scale;
  }
  return 1.0;
}

}  // namespace

LayerIds layer_ids(const Classifier& model) {
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) names.push_back(p.key());
  auto matcher = model.group_matcher();
  return matcher.empty() ? automatic_layer_ids(names, model.classifier_pattern()) : matched_layer_ids(names, matcher);
}

ParamGroups job_param_groups(const Job& job, const NamedParameters& params) {
  Config c = job.recipe.section("optimizer");
  std::optional<LayerIds> layers;
  if (!c.is_null("layer_decay")) layers = layer_ids(*job.model);
  LrScaleOf extra;
  const auto& rules = job.config.freeze;
  if (std::any_of(rules.begin(), rules.end(), [](const FreezeRule& r) { return r.lr_scale != 1.0; }))
    extra = [&rules](const std::string& name) { return freeze_lr_scale(rules, name); };
  return plan_param_groups(c, params, layers ? &*layers : nullptr, extra);
}

}  // namespace trainrun
