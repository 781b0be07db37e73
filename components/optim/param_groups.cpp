// Parameter groups by rule: zero weight decay for biases and norms (timm's
// param_groups_weight_decay), layer-wise lr decay (timm's param_groups_layer_decay, after BEiT),
// and explicit groups by glob, each group with its lr_scale and weight decay.
#include "components/optim/optim.h"

#include <fnmatch.h>

#include <cmath>
#include <map>
#include <stdexcept>

namespace trainrun {

Schema optimizer_schema(const char* lr, const char* weight_decay) {
  return Schema()
      .add("lr", Type::Float, yaml(lr), "learning rate").above(0)
      .add("weight_decay", Type::Float, yaml(weight_decay), "weight decay (L2 for sgd/adam/rmsprop/radam/nadam, decoupled for adamw/lion, LAMB's for lamb)").min(0)
      .add("no_decay", Type::StringList, yaml("[]"),
           "parameters with zero weight decay: `bias`, `norm` (1-D weights) or globs")
      .add("layer_decay", Type::Float, yaml("null"),
           "layer-wise lr decay (timm's layer_decay): a parameter of layer i of L gets lr * layer_decay^(L-1-i), "
           "layers from the model's group matcher").nullable().above(0).max(1)
      .add("groups", Type::List, yaml("[]"),
           "parameter groups by glob, last match wins: [{params: GLOB, lr_scale: 1.0, weight_decay: null}]");
}

const Schema& param_group_rule_schema() {
  static const Schema schema =
      Schema()
          .required("params", Type::String, "glob over parameter names (`fc.*`, `layer4.*`)")
          .add("lr_scale", Type::Float, yaml("1.0"), "factor on the (scheduled) lr of these parameters").above(0)
          .add("weight_decay", Type::Float, yaml("null"), "their weight decay; null = the optimizer's (or no_decay's 0)")
          .nullable().min(0);
  return schema;
}

namespace {

bool ends_with_bias(const std::string& name) {
  return name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
}

bool glob(const std::string& pattern, const std::string& name) { return fnmatch(pattern.c_str(), name.c_str(), 0) == 0; }

bool excluded_from_decay(const std::string& name, const at::Tensor& p, const std::vector<std::string>& patterns) {
  for (const auto& pat : patterns) {
    if (pat == "bias" ? ends_with_bias(name) : pat == "norm" ? p.dim() <= 1 && !ends_with_bias(name) : glob(pat, name))
      return true;
  }
  return false;
}

struct OptimizerGroupRule {
  std::string params;
  double lr_scale;
  std::optional<double> weight_decay;
};

std::vector<OptimizerGroupRule> group_rules(const Config& c) {
  std::vector<OptimizerGroupRule> rules;
  const YAML::Node list = c.node()["groups"];
  if (!list || !list.IsSequence()) return rules;  // an optimizer whose schema has no groups
  for (const auto& g : list) {
    OptimizerGroupRule r{g["params"].as<std::string>(), g["lr_scale"].as<double>(), std::nullopt};
    if (g["weight_decay"] && !g["weight_decay"].IsNull()) r.weight_decay = g["weight_decay"].as<double>();
    rules.push_back(r);
  }
  return rules;
}

std::string show_scale(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

ParamGroups plan_param_groups(const Config& c, const NamedParameters& params, const LayerIds* layers,
                              const LrScaleOf& extra) {
  // Optimizers registered with their own schema (plugins) may not have every key.
  const auto no_decay = c.get<std::vector<std::string>>("no_decay", {});
  const double weight_decay = c.get<double>("weight_decay", 0.0);
  const std::optional<double> layer_decay =
      c.is_null("layer_decay") ? std::nullopt : std::optional<double>(c.get<double>("layer_decay"));
  const std::vector<OptimizerGroupRule> rules = group_rules(c);
  if (layer_decay && (!layers || layers->count <= 0))
    throw std::invalid_argument(c.path() + ".layer_decay: this model has no layer grouping to decay over");

  if (!layer_decay && rules.empty() && !extra) {
    ParamGroup decay{"decay", {}, 1.0, std::nullopt}, zero{"no_decay", {}, 1.0, 0.0};
    for (const auto& [name, p] : params) (excluded_from_decay(name, p, no_decay) ? zero : decay).params.emplace_back(name, p);
    ParamGroups plan;
    for (auto* g : {&decay, &zero})
      if (!g->params.empty()) plan.push_back(std::move(*g));
    return plan;
  }

  // timm's layer_scales: max(min_scale = 0, layer_decay ** (layer_max - i)).
  std::vector<double> layer_scales;
  if (layer_decay)
    for (int64_t i = 0; i < layers->count; ++i) layer_scales.push_back(std::pow(*layer_decay, double(layers->count - 1 - i)));

  ParamGroups plan;
  std::map<std::string, std::size_t> index;  // group name -> position, in order of first appearance
  for (const auto& [name, p] : params) {
    const bool zero = excluded_from_decay(name, p, no_decay);
    std::optional<double> wd = zero ? std::optional<double>(0.0) : std::nullopt;
    std::string key = zero ? "no_decay" : "decay";
    double scale = 1.0;
    if (layer_decay) {
      int64_t id = layers->of(name);
      scale = layer_scales.at(std::size_t(id));
      key = "layer_" + std::to_string(id) + "_" + key;
    }
    for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
      if (!glob(it->params, name)) continue;
      scale *= it->lr_scale;
      if (it->weight_decay) wd = it->weight_decay;
      key += "_" + it->params;
      break;
    }
    if (extra) {
      const double x = extra(name);
      if (x != 1.0) scale *= x, key += "_x" + show_scale(x);
    }
    if (wd && !zero && *wd != weight_decay) key += "_wd" + show_scale(*wd);
    auto [pos, added] = index.emplace(key, plan.size());
    if (added) plan.push_back(ParamGroup{key, {}, scale, wd});
    plan[pos->second].params.emplace_back(name, p);
  }
  return plan;
}

}  // namespace trainrun
