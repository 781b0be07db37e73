// The optimizers built through the registry from a recipe section, against torch.optim run by
// python3-torch (lion, lamb: timm's, re-derived in tests/py/optim_ref.py; the test process's one
// Python, support/python_worker.h): ten steps on a small fixed net must leave the same
// parameters (1e-6). The custom ones (radam, nadam, lion, lamb) survive a checkpoint. And the
// cross_entropy loss against F.cross_entropy.
#include "components/optim/optim.h"
#include "runner/recipe/freeze.h"
#include "runner/recipe/job.h"
#include "runner/recipe/recipe.h"
#include "support/safetensors.h"

#include "support/python_worker.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <sstream>

namespace trainrun {
namespace {

using nlohmann::json;

const std::vector<std::string> kParams = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

// Linear 5->3, tanh, Linear 3->2, eight examples: small enough to read, big enough that every
// optimizer knob moves the result well past the tolerance.
TensorList fixture() {
  torch::manual_seed(0);
  return {{"fc1.weight", torch::randn({3, 5}) * 0.5}, {"fc1.bias", torch::randn({3}) * 0.5},
          {"fc2.weight", torch::randn({2, 3}) * 0.5}, {"fc2.bias", torch::randn({2}) * 0.5},
          {"x", torch::randn({8, 5})},                 {"y", torch::randint(0, 2, {8}, torch::kLong)}};
}

at::Tensor get(const TensorList& list, const std::string& name) {
  for (auto& [n, t] : list)
    if (n == name) return t;
  throw std::out_of_range(name);
}

// The optimizer section as the recipe engine resolves it (checked, defaults filled in).
Config optimizer_config(const std::string& section) {
  return load_recipe(test::source("recipes/quickstart.yaml"), {"optimizer=" + section}).section("optimizer");
}

struct OptimizerCase {
  std::string name;
  std::string section;  // JSON, which is also a YAML flow mapping for the recipe override
};

void PrintTo(const OptimizerCase& c, std::ostream* os) { *os << c.section; }

class OptimizerParity : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(OptimizerParity, TenStepsMatchTorchOptim) {
  test::TempDir dir;
  TensorList data = fixture();
  save_safetensors(dir / "in.safetensors", data);
  auto py = test::python_reference("optim_steps.py", {dir / "in.safetensors", GetParam().section, dir / "out.safetensors"});
  ASSERT_EQ(py.code, 0) << py.err;
  TensorList expected = load_safetensors(dir / "out.safetensors");

  NamedParameters params;
  for (auto& n : kParams) params.emplace_back(n, get(data, n).clone().requires_grad_());
  Config c = optimizer_config(GetParam().section);
  auto optimizer = Registry<torch::optim::Optimizer>::instance().get(c.get<std::string>("name")).make(c, plan_param_groups(c, params));
  auto loss = Registry<Loss>::instance().get("cross_entropy").make(Config(YAML::Load("{label_smoothing: 0.0}"), "train.loss"));
  at::Tensor x = get(data, "x"), y = get(data, "y");
  for (int step = 0; step < 10; ++step) {
    optimizer->zero_grad();
    at::Tensor h = torch::tanh(torch::nn::functional::linear(x, params[0].second, params[1].second));
    at::Tensor out = torch::nn::functional::linear(h, params[2].second, params[3].second);
    (*loss)(out, y, false).backward();
    optimizer->step();
  }

  double worst = 0, moved = 0;
  for (auto& [name, p] : params) {
    worst = std::max(worst, (p.detach() - get(expected, name)).abs().max().item<double>());
    moved = std::max(moved, (p.detach() - get(data, name)).abs().max().item<double>());
  }
  EXPECT_LE(worst, 1e-6);
  EXPECT_GT(moved, 1e-2) << "the parameters barely moved; the comparison would prove little";
  std::cout << "[ measured ] max abs difference vs torch.optim after 10 steps: " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, OptimizerParity,
    ::testing::Values(
        OptimizerCase{"sgd", R"({"name": "sgd", "lr": 0.1})"},
        OptimizerCase{"sgd_momentum_wd", R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01})"},
        OptimizerCase{"sgd_nesterov",
                      R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": true, "weight_decay": 0.01})"},
        OptimizerCase{"sgd_dampening", R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "dampening": 0.5})"},
        OptimizerCase{"adam_l2", R"({"name": "adam", "lr": 0.01, "weight_decay": 0.01})"},
        OptimizerCase{"adam_amsgrad",
                      R"({"name": "adam", "lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6, "amsgrad": true})"},
        OptimizerCase{"adamw_defaults", R"({"name": "adamw", "lr": 0.01})"},
        OptimizerCase{"adamw_no_decay_bias",
                      R"({"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "no_decay": ["bias"]})"},
        OptimizerCase{"sgd_no_decay_bias",
                      R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.1, "no_decay": ["bias"]})"},
        OptimizerCase{"rmsprop_defaults", R"({"name": "rmsprop"})"},
        OptimizerCase{"rmsprop_centered_momentum",
                      R"({"name": "rmsprop", "lr": 0.005, "alpha": 0.9, "eps": 1e-6, "momentum": 0.9, "centered": true, "weight_decay": 0.01})"},
        OptimizerCase{"radam_defaults", R"({"name": "radam", "lr": 0.01})"},
        OptimizerCase{"radam_betas_wd", R"({"name": "radam", "lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6, "weight_decay": 0.05})"},
        OptimizerCase{"nadam_defaults", R"({"name": "nadam", "lr": 0.01})"},
        OptimizerCase{"nadam_every_knob",
                      R"({"name": "nadam", "lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.05, "momentum_decay": 0.01})"},
        OptimizerCase{"lion_defaults", R"({"name": "lion", "lr": 0.01})"},
        OptimizerCase{"lion_betas_wd_no_decay_bias",
                      R"({"name": "lion", "lr": 0.01, "betas": [0.99, 0.5], "weight_decay": 0.5, "no_decay": ["bias"]})"},
        OptimizerCase{"lamb_defaults", R"({"name": "lamb", "lr": 0.01})"},
        OptimizerCase{"lamb_clipped_no_decay_bias",
                      R"({"name": "lamb", "lr": 0.01, "max_grad_norm": 0.05, "eps": 1e-3, "weight_decay": 0.1, "no_decay": ["bias"]})"},
        OptimizerCase{"lamb_trust_clip_always_adapt",
                      R"({"name": "lamb", "lr": 0.01, "trust_clip": true, "always_adapt": true, "no_decay": ["bias"]})"},
        OptimizerCase{"lamb_no_averaging_no_correction_no_clip",
                      R"({"name": "lamb", "lr": 0.01, "grad_averaging": false, "bias_correction": false, "max_grad_norm": null, "betas": [0.8, 0.9]})"}),
    [](const ::testing::TestParamInfo<OptimizerCase>& info) { return info.param.name; });

// Gradual unfreezing (train.unfreeze_at_epoch, freeze[].from_epoch): parameters that start
// training mid-run join the running optimizer as torch's add_param_group does, with the recipe's
// settings and fresh state, while the others keep theirs.
TEST(OptimizerParity, UnfrozenParametersJoinLikeAddParamGroup) {
  for (std::string section : {R"({"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "no_decay": ["bias"]})",
                              R"({"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01})"}) {
    SCOPED_TRACE(section);
    test::TempDir dir;
    TensorList data = fixture();
    save_safetensors(dir / "in.safetensors", data);
    auto py = test::python_reference("optim_steps.py", {dir / "in.safetensors", section, dir / "out.safetensors", "4"});
    ASSERT_EQ(py.code, 0) << py.err;
    TensorList expected = load_safetensors(dir / "out.safetensors");

    NamedParameters params;
    for (auto& n : kParams) params.emplace_back(n, get(data, n).clone().requires_grad_(n.rfind("fc2", 0) == 0));
    Job job;
    job.recipe = load_recipe(test::source("recipes/quickstart.yaml"), {"optimizer=" + section});
    auto optimizer = build_optimizer(job, NamedParameters(params.begin() + 2, params.end()));
    auto loss = Registry<Loss>::instance().get("cross_entropy").make(Config(YAML::Load("{label_smoothing: 0.0}"), "train.loss"));
    at::Tensor x = get(data, "x"), y = get(data, "y");
    for (int step = 0; step < 10; ++step) {
      if (step == 4) {
        for (int i = 0; i < 2; ++i) params[i].second.requires_grad_(true);
        add_param_groups(job, *optimizer, NamedParameters(params.begin(), params.begin() + 2));
      }
      optimizer->zero_grad();
      at::Tensor h = torch::tanh(torch::nn::functional::linear(x, params[0].second, params[1].second));
      at::Tensor out = torch::nn::functional::linear(h, params[2].second, params[3].second);
      (*loss)(out, y, false).backward();
      optimizer->step();
    }
    double worst = 0;
    for (auto& [name, p] : params) worst = std::max(worst, (p.detach() - get(expected, name)).abs().max().item<double>());
    EXPECT_LE(worst, 1e-6);
    EXPECT_GT((params[0].second.detach() - get(data, "fc1.weight")).abs().max().item<double>(), 1e-2);
  }
}

// A run resumed from optimizer.pt (Optimizer::save / load, as checkpoints.cpp writes it) goes on
// exactly as the uninterrupted one; a fresh optimizer in its place would not.
TEST(OptimizerCheckpoint, CustomOptimizersResumeExactly) {
  for (std::string section : {R"({"name": "radam", "lr": 0.01})", R"({"name": "nadam", "lr": 0.01, "weight_decay": 0.01})",
                              R"({"name": "lion", "lr": 0.01, "betas": [0.99, 0.5], "weight_decay": 0.1})",
                              R"({"name": "lamb", "lr": 0.01, "max_grad_norm": 0.05, "no_decay": ["bias"]})"}) {
    SCOPED_TRACE(section);
    TensorList data = fixture();
    Config c = optimizer_config(section);
    const auto& kind = Registry<torch::optim::Optimizer>::instance().get(c.get<std::string>("name"));
    auto params_of = [&](const TensorList& from) {
      NamedParameters params;
      for (auto& n : kParams) params.emplace_back(n, get(from, n).clone().requires_grad_());
      return params;
    };
    auto train = [&](torch::optim::Optimizer& opt, const NamedParameters& params, int steps) {
      for (int step = 0; step < steps; ++step) {
        opt.zero_grad();
        at::Tensor h = torch::tanh(torch::nn::functional::linear(get(data, "x"), params[0].second, params[1].second));
        at::Tensor out = torch::nn::functional::linear(h, params[2].second, params[3].second);
        torch::nn::functional::cross_entropy(out, get(data, "y")).backward();
        opt.step();
      }
    };
    NamedParameters straight = params_of(data);
    auto a = kind.make(c, plan_param_groups(c, straight));
    train(*a, straight, 4);
    std::stringstream saved;
    {
      torch::serialize::OutputArchive archive;
      a->save(archive);
      archive.save_to(saved);
    }
    TensorList at4;
    for (auto& [n, p] : straight) at4.emplace_back(n, p.detach().clone());
    train(*a, straight, 6);

    NamedParameters resumed = params_of(at4), fresh = params_of(at4);
    auto b = kind.make(c, plan_param_groups(c, resumed));
    torch::serialize::InputArchive archive;
    archive.load_from(saved);
    b->load(archive);
    train(*b, resumed, 6);
    auto f = kind.make(c, plan_param_groups(c, fresh));
    train(*f, fresh, 6);

    double worst = 0, fresh_gap = 0;
    for (std::size_t i = 0; i < kParams.size(); ++i) {
      worst = std::max(worst, (resumed[i].second - straight[i].second).abs().max().item<double>());
      fresh_gap = std::max(fresh_gap, (fresh[i].second - straight[i].second).abs().max().item<double>());
    }
    EXPECT_EQ(worst, 0.0);
    EXPECT_GT(fresh_gap, 1e-4) << "without its state the optimizer would take other steps; the check would prove little";
  }
}

// OneCycleLR cycles what torch finds as `betas`: beta1 of every Adam-like optimizer.
TEST(OptimizerRegistry, OneCycleFindsBeta1OfTheNewOptimizers) {
  for (std::string name : {"radam", "nadam", "lion", "lamb", "rmsprop"}) {
    NamedParameters params;
    for (auto& [n, t] : fixture())
      if (n != "x" && n != "y") params.emplace_back(n, t.requires_grad_());
    Config c = optimizer_config("{name: " + name + ", no_decay: [bias]}");
    auto opt = Registry<torch::optim::Optimizer>::instance().get(name).make(c, plan_param_groups(c, params));
    ASSERT_EQ(opt->param_groups().size(), 2u) << name;
    EXPECT_EQ(current_momentum(*opt), name == "rmsprop" ? 0.0 : 0.9) << name;
    ASSERT_TRUE(set_momentum(*opt, 0.85)) << name;
    EXPECT_EQ(current_momentum(*opt), 0.85) << name;
    opt->param_groups()[0].options().set_lr(0.5);
    EXPECT_EQ(current_lr(*opt), 0.5) << name;
  }
}

TEST(OptimizerRegistry, NoDecayPutsBiasesInAZeroDecayGroup) {
  NamedParameters params;
  for (auto& [n, t] : fixture())
    if (n != "x" && n != "y") params.emplace_back(n, t.requires_grad_());
  Config c = optimizer_config(R"({name: adamw, weight_decay: 0.5, no_decay: [bias]})");
  auto opt = Registry<torch::optim::Optimizer>::instance().get("adamw").make(c, plan_param_groups(c, params));
  ASSERT_EQ(opt->param_groups().size(), 2u);
  auto& decayed = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
  auto& zero = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[1].options());
  EXPECT_EQ(decayed.weight_decay(), 0.5);
  EXPECT_EQ(zero.weight_decay(), 0.0);
  EXPECT_EQ(opt->param_groups()[1].params().size(), 2u);  // fc1.bias, fc2.bias
}

TEST(Loss, CrossEntropyWithLabelSmoothingIsTorchs) {
  test::TempDir dir;
  torch::manual_seed(1);
  at::Tensor logits = torch::randn({6, 4}) * 2, target = torch::randint(0, 4, {6}, torch::kLong);
  save_safetensors(dir / "in.safetensors", {{"logits", logits}, {"target", target}});
  auto py = test::python_reference("cross_entropy.py", {dir / "in.safetensors", "0.1"});
  ASSERT_EQ(py.code, 0) << py.err;
  json expected = json::parse(py.out);
  double want = expected["loss"].get<double>();
  std::vector<float> flat;
  for (auto& row : expected["grad"])
    for (auto& v : row) flat.push_back(v.get<float>());
  at::Tensor want_grad = torch::tensor(flat).reshape({6, 4});

  auto loss = Registry<Loss>::instance().get("cross_entropy").make(Config(YAML::Load("{label_smoothing: 0.1}"), "train.loss"));
  at::Tensor x = logits.clone().requires_grad_();
  at::Tensor value = (*loss)(x, target, false);
  value.backward();
  EXPECT_NEAR(value.item<double>(), want, 1e-6 * std::abs(want));
  EXPECT_LE((x.grad() - want_grad).abs().max().item<double>(), 1e-7);
  // A model that outputs log-probabilities (basicnet) gets the same loss.
  EXPECT_NEAR((*loss)(torch::log_softmax(logits, 1), target, true).item<double>(), want, 1e-6 * std::abs(want));
  // And the smoothing matters at this size, so the comparison above checks it.
  auto plain = Registry<Loss>::instance().get("cross_entropy").make(Config(YAML::Load("{label_smoothing: 0.0}"), "train.loss"));
  EXPECT_GT(std::abs((*plain)(logits, target, false).item<double>() - want), 1e-3);
  std::cout << "[ measured ] cross_entropy(label_smoothing=0.1) relative difference vs F.cross_entropy: "
            << std::abs(value.item<double>() - want) / std::abs(want) << "\n";
}

}  // namespace
}  // namespace trainrun
