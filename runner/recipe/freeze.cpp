#include "runner/recipe/freeze.h"

#include <fnmatch.h>
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <set>

namespace trainrun {

namespace {

bool rule_matches(const FreezeRule& rule, const std::string& name) {
  return fnmatch(rule.params.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

std::vector<int64_t> apply_freeze_rules(torch::nn::Module& model, const std::vector<FreezeRule>& rules, int64_t epoch) {
  std::vector<int64_t> matched(rules.size(), 0);
  for (auto& p : model.named_parameters()) {
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (!rule_matches(rules[i], p.key())) continue;
      ++matched[i];  // a rule that matches nothing at any epoch is worth a warning
      if (rules[i].from_epoch <= epoch) p.value().set_requires_grad(rules[i].trainable);
    }
  }
  return matched;
}

bool freeze_changes_at(const Job& job, int64_t epoch) {
  if (epoch <= 0) return false;  // build_job applied epoch 0's rules
  for (const auto& rule : job.config.freeze)
    if (rule.from_epoch == epoch) return true;
  return false;
}

NamedParameters apply_freeze_schedule(Job& job, int64_t epoch) {
  std::set<const void*> before;
  for (auto& [_, p] : job.trainable()) before.insert(p.unsafeGetTensorImpl());
  apply_freeze_rules(*job.model, job.config.freeze, epoch);
  NamedParameters added;
  for (auto& [name, p] : job.trainable())
    if (!before.count(p.unsafeGetTensorImpl())) added.emplace_back(name, p);
  return added;
}

void add_param_groups(const Job& job, torch::optim::Optimizer& optimizer, const NamedParameters& params) {
  if (params.empty()) return;
  // The recipe's optimizer over just these parameters lays out their groups and options.
  auto fresh = build_optimizer(job, params);
  for (const auto& group : fresh->param_groups()) optimizer.add_param_group(group);
}

int64_t freeze_batchnorm_statistics(torch::nn::Module& model) {
  int64_t n = 0;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (m->name().rfind("torch::nn::BatchNorm", 0) != 0) continue;
    auto params = m->parameters();
    bool frozen = std::none_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.requires_grad(); });
    if (frozen) m->eval(), ++n;
  }
  return n;
}

}  // namespace trainrun
