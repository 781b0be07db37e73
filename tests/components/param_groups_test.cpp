// Parameter groups by rule: optimizer.layer_decay against timm's param_groups_layer_decay for
// resnet50d (tests/py/layer_decay_ref.py re-derives timm's functions), optimizer.groups against
// torch with the same groups written out by hand, and the freeze rules' lr_scale.
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "runner/recipe/freeze.h"
#include "runner/recipe/job.h"
#include "runner/recipe/param_groups.h"
#include "runner/recipe/recipe.h"
#include "support/safetensors.h"

#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace trainrun {
namespace {

using nlohmann::json;

Job group_test_job(const std::vector<std::string>& overrides) {
  Job job;
  job.recipe = load_recipe(test::source("recipes/quickstart.yaml"), overrides);
  job.config = RunConfig::from(job.recipe.root);
  return job;
}

std::shared_ptr<Classifier> group_test_model(const std::string& yaml_text) {
  Job probe = group_test_job({"model=" + yaml_text});
  Config c = probe.recipe.section("model");
  return Registry<Classifier>::instance().get(c.get<std::string>("name")).make(c);
}

// Every torch group's parameters, lr and weight decay equal the groups timm's
// create_optimizer_v2(model, 'adamw', lr, weight_decay, layer_decay=0.75) makes for resnet50d,
// in timm's order; the lrs are equal bit for bit (both are lr * 0.75 ** k).
TEST(ParamGroups, LayerDecayIsTimmsForResnet50d) {
  const std::string section = "{name: adamw, lr: 1.0e-3, weight_decay: 0.05, layer_decay: 0.75, no_decay: [bias, norm]}";
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/layer_decay_ref.py") + " 1e-3 0.05 0.75");
  ASSERT_EQ(py.code, 0) << py.err;
  json expected = json::parse(py.out);

  Job job = group_test_job({"optimizer=" + section, "model={name: resnet50d, num_classes: 37, pretrained: null}"});
  job.model = group_test_model("{name: resnet50d, num_classes: 37, pretrained: null}");
  auto optimizer = build_optimizer(job);
  ParamGroups plan = job_param_groups(job, job.trainable());
  ASSERT_EQ(optimizer->param_groups().size(), expected.size());
  ASSERT_EQ(plan.size(), expected.size());
  EXPECT_EQ(layer_ids(*job.model).count, 18);  // stem, 16 bottlenecks, the head
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i]["name"].get<std::string>());
    EXPECT_EQ(plan[i].name, expected[i]["name"].get<std::string>());
    auto& o = static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[i].options());
    EXPECT_EQ(o.lr(), expected[i]["lr"].get<double>());
    EXPECT_EQ(o.weight_decay(), expected[i]["weight_decay"].get<double>());
    std::vector<std::string> names;
    for (auto& [n, p] : plan[i].params) names.push_back(n);
    EXPECT_EQ(names, expected[i]["params"].get<std::vector<std::string>>());
    ASSERT_EQ(optimizer->param_groups()[i].params().size(), names.size());
    for (std::size_t k = 0; k < names.size(); ++k)
      EXPECT_TRUE(optimizer->param_groups()[i].params()[k].is_same(plan[i].params[k].second));
  }
  EXPECT_EQ(plan.front().name, "layer_0_decay");
  EXPECT_EQ(plan.back().name, "layer_17_no_decay");
}

// The schedule multiplies each group's own lr, so with onecycle every group keeps its lr_scale
// (timm's schedulers multiply param_group['lr_scale'] the same way).
TEST(ParamGroups, SchedulesKeepEachGroupsScale) {
  Job job = group_test_job({"optimizer={name: sgd, lr: 0.1, momentum: 0.9, layer_decay: 0.5}",
                      "scheduler={name: onecycle, max_lr: 1.0}"});
  job.model = group_test_model("{name: basicnet, num_classes: 10}");
  auto optimizer = build_optimizer(job);
  // BasicNet has no group matcher: timm's auto_group_layers puts its six trunk tensors in layer 0
  // and the classifier (fc2) in layer 1.
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  auto scheduler = build_scheduler(job, *optimizer, 20, 10);
  for (int s = 0; s < 20; ++s) {
    const double head = optimizer->param_groups()[1].options().get_lr();
    EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), head * 0.5) << "step " << s;
    scheduler->step();
  }
}

// optimizer.groups (last match wins) against torch.optim.SGD given the same groups by hand:
// ten steps leave the same parameters.
TEST(ParamGroups, GroupsByGlobAreTorchParamGroups) {
  const std::string section =
      R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, )"
      R"("groups": [{"params": "fc1.*", "lr_scale": 0.1}, {"params": "*.bias", "weight_decay": 0.0}]})";
  const std::string by_hand =
      R"([{"names": ["fc1.weight"], "lr": 0.010000000000000002}, {"names": ["fc1.bias", "fc2.bias"], "weight_decay": 0.0}, )"
      R"({"names": ["fc2.weight"]}])";
  test::TempDir dir;
  torch::manual_seed(0);
  std::vector<std::pair<std::string, at::Tensor>> data = {
      {"fc1.weight", torch::randn({3, 5}) * 0.5}, {"fc1.bias", torch::randn({3}) * 0.5},
      {"fc2.weight", torch::randn({2, 3}) * 0.5}, {"fc2.bias", torch::randn({2}) * 0.5},
      {"x", torch::randn({8, 5})},                 {"y", torch::randint(0, 2, {8}, torch::kLong)}};
  save_safetensors(dir / "in.safetensors", data);
  auto py = test::run("OPTIM_GROUPS='" + by_hand + "' " + test::kPython + " " + test::source("tests/py/optim_steps.py") + " " +
                      (dir / "in.safetensors") + " '" + section + "' " + (dir / "out.safetensors"));
  ASSERT_EQ(py.code, 0) << py.err;
  TensorList expected = load_safetensors(dir / "out.safetensors");

  NamedParameters params;
  for (int i = 0; i < 4; ++i) params.emplace_back(data[i].first, data[i].second.clone().requires_grad_());
  Config c = group_test_job({"optimizer=" + section}).recipe.section("optimizer");
  ParamGroups plan = plan_param_groups(c, params);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].lr_scale, 0.1);
  EXPECT_EQ(plan[1].weight_decay, std::optional<double>(0.0));
  auto optimizer = Registry<torch::optim::Optimizer>::instance().get("sgd").make(c, plan);
  for (int step = 0; step < 10; ++step) {
    optimizer->zero_grad();
    at::Tensor h = torch::tanh(torch::nn::functional::linear(data[4].second, params[0].second, params[1].second));
    at::Tensor out = torch::nn::functional::linear(h, params[2].second, params[3].second);
    torch::nn::functional::cross_entropy(out, data[5].second).backward();
    optimizer->step();
  }
  double worst = 0;
  for (std::size_t i = 0; i < params.size(); ++i)
    for (auto& [n, t] : expected)
      if (n == params[i].first) worst = std::max(worst, (params[i].second.detach() - t).abs().max().item<double>());
  EXPECT_LE(worst, 1e-6);
  std::cout << "[ measured ] optimizer.groups vs torch param groups, max abs difference after 10 steps: " << worst << "\n";
}

// A freeze rule's lr_scale: the parameters it unfreezes join at that fraction of the lr, and the
// scheduler keeps them there (a backbone fine-tuned more gently than the head).
TEST(ParamGroups, FreezeRuleLrScaleAppliesToTheParametersItUnfreezes) {
  Job job = group_test_job({"optimizer={name: adamw, lr: 0.01}",
                      "freeze=[{params: '*', trainable: false}, {params: 'fc2.*', trainable: true}, "
                      "{params: 'fc1.*', trainable: true, from_epoch: 1, lr_scale: 0.1}]"});
  job.model = group_test_model("{name: basicnet, num_classes: 10}");
  apply_freeze_rules(*job.model, job.config.freeze, 0);
  auto optimizer = build_optimizer(job);
  ASSERT_EQ(optimizer->param_groups().size(), 1u);
  EXPECT_EQ(optimizer->param_groups()[0].options().get_lr(), 0.01);
  auto scheduler = build_scheduler(job, *optimizer, 10, 5);
  for (int s = 0; s < 5; ++s) scheduler->step();
  add_param_groups(job, *optimizer, apply_freeze_schedule(job, 1));
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  EXPECT_EQ(optimizer->param_groups()[1].params().size(), 2u);  // fc1.weight, fc1.bias
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[1].options().get_lr(), 0.001);
  EXPECT_EQ(job_param_groups(job, job.trainable())[0].name, "decay_x0.1");  // fc1 comes first
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

// A model with one parameter per name, and timm-style matcher rules with suffixes.
class SuffixMatched : public Classifier {
 public:
  SuffixMatched() {
    for (const char* name : {"stem", "blocks_0", "blocks_1", "blocks_1_down", "norm", "head"})
      register_parameter(name, torch::zeros({1}));
  }
  at::Tensor forward(const at::Tensor& x) override { return x; }
  InputConfig input_config() const override { return {}; }
  std::string classifier_pattern() const override { return "head"; }
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^stem)"},
            {"blocks", R"(^blocks_(\d+)_down)", {0}},
            {"blocks", R"(^blocks_(\d+))"},
            {"blocks", R"(^norm)", {99999}}};
  }
};

// timm's group_with_matcher(reverse=True) on these names with
// dict(stem=r'^stem', blocks=[(r'^blocks_(\d+)_down', (0,)), (r'^blocks_(\d+)', None), (r'^norm', (99999,))])
// (run at aa4b5850): one ordinal for the group name however many rules it has, the suffix after
// the captured numbers, and MATCH_PREV_GROUP (99999) joining the layer before.
TEST(ParamGroups, MatcherSuffixesAndMatchPrevGroupAreTimms) {
  SuffixMatched model;
  LayerIds ids = layer_ids(model);
  const std::map<std::string, int64_t> timm{{"stem", 0},          {"blocks_0", 1}, {"blocks_1", 2},
                                            {"blocks_1_down", 3}, {"norm", 3},     {"head", 4}};
  EXPECT_EQ(ids.count, 5);
  for (const auto& [name, id] : timm) EXPECT_EQ(ids.of(name), id) << name;
}

}  // namespace
}  // namespace trainrun
