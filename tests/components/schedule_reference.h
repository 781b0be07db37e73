// The reference harness of the scheduler tests: a two-group optimizer, the scheduler a recipe
// section builds, and one whole run's lr and momentum compared with torch.optim.lr_scheduler run
// by python3-torch (tests/py/schedule.py, through the process's one Python: support/python_worker.h),
// to 1e-9 relative.
#pragma once

#include "components/optim/optim.h"
#include "runner/recipe/recipe.h"

#include "support/python_worker.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <functional>

namespace trainrun::schedule_reference {

using nlohmann::json;

constexpr int64_t kSteps = 137;        // optimizer steps in the run
constexpr int64_t kStepsPerEpoch = 10;  // so the run is 13.7 epochs
constexpr double kTolerance = 1e-9;     // relative
inline const std::vector<double> kLrs = {0.1, 0.05};  // two groups, so per-group base lrs are checked

// The scheduler section as the recipe engine resolves it (checked, defaults filled in).
inline Config scheduler_config(const std::string& section) {
  return load_recipe(test::source("recipes/quickstart.yaml"), {"scheduler=" + section}).section("scheduler");
}

// A C++ optimizer with one group per kLrs entry, and the same optimizer for schedule.py.
struct TestOptimizer {
  std::string torch_name;
  json torch_args = json::object();
  std::function<std::shared_ptr<torch::optim::Optimizer>()> make;
};

template <class Optim, class Options>
TestOptimizer two_groups(std::string torch_name, json torch_args, Options defaults) {
  return {std::move(torch_name), std::move(torch_args), [defaults] {
            std::vector<torch::optim::OptimizerParamGroup> groups;
            for (double lr : kLrs) {
              auto o = std::make_unique<Options>(defaults);
              o->lr(lr);
              groups.emplace_back(std::vector<at::Tensor>{torch::zeros({2}).requires_grad_()}, std::move(o));
            }
            return std::shared_ptr<torch::optim::Optimizer>(std::make_shared<Optim>(groups, defaults));
          }};
}

inline TestOptimizer sgd_momentum() {
  return two_groups<torch::optim::SGD>("sgd", {{"momentum", 0.9}}, torch::optim::SGDOptions(0.1).momentum(0.9));
}
inline TestOptimizer adam() { return two_groups<torch::optim::Adam>("adam", json::object(), torch::optim::AdamOptions(0.1)); }
inline TestOptimizer adamw() { return two_groups<torch::optim::AdamW>("adamw", json::object(), torch::optim::AdamWOptions(0.1)); }
inline TestOptimizer adagrad() {
  return two_groups<torch::optim::Adagrad>("adagrad", json::object(), torch::optim::AdagradOptions(0.1));
}

// `optimizer_lr`: the recipe's optimizer.lr as build_scheduler passes it (0: unknown).
inline std::shared_ptr<Scheduler> make_scheduler(const std::string& section, torch::optim::Optimizer& opt,
                                                 int64_t total = kSteps, double optimizer_lr = 0) {
  Config c = scheduler_config(section);
  auto s = Registry<Scheduler>::instance().get(c.get<std::string>("name")).make(c, {&opt, total, kStepsPerEpoch, optimizer_lr});
  s->set_steps_done(0);  // as build_scheduler does: step 0 is the state right after construction
  return s;
}

inline std::optional<double> group_momentum(torch::optim::OptimizerOptions& o) {
  if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&o)) return sgd->momentum();
  if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&o)) return std::get<0>(a->betas());
  if (auto* w = dynamic_cast<torch::optim::AdamWOptions*>(&o)) return std::get<0>(w->betas());
  return std::nullopt;
}

inline double relative_difference(double ours, double theirs) {
  if (ours == theirs) return 0;
  return std::abs(ours - theirs) / std::max(std::abs(ours), std::abs(theirs));
}

// Runs `section` over the whole run in C++ and `torch_scheduler` ({"scheduler", "args"}) in
// PyTorch on the same optimizer; every group's lr and momentum must agree at every step.
inline void expect_same_schedule(const TestOptimizer& optim, const std::string& section, json torch_scheduler,
                          double optimizer_lr = 0) {
  json spec = {{"optimizer", optim.torch_name}, {"optimizer_args", optim.torch_args}, {"lrs", kLrs}, {"steps", kSteps}};
  spec.update(torch_scheduler);
  auto py = test::python_reference("schedule.py", {spec.dump()});
  ASSERT_EQ(py.code, 0) << py.err;
  json expected = json::parse(py.out);
  ASSERT_EQ(expected["lr"].size(), std::size_t(kSteps + 1));

  auto opt = optim.make();
  auto scheduler = make_scheduler(section, *opt, kSteps, optimizer_lr);
  double worst_lr = 0, worst_momentum = 0;
  for (int64_t step = 0; step <= kSteps; ++step) {
    if (step > 0) scheduler->step();
    ASSERT_EQ(scheduler->steps_done(), step);
    for (std::size_t g = 0; g < kLrs.size(); ++g) {
      double lr = opt->param_groups()[g].options().get_lr();
      double want = expected["lr"][step][g].get<double>();
      double d = relative_difference(lr, want);
      worst_lr = std::max(worst_lr, d);
      ASSERT_LE(d, kTolerance) << "step " << step << " group " << g << ": lr " << lr << ", torch " << want;
      const json& m = expected["momentum"][step][g];
      std::optional<double> ours = group_momentum(opt->param_groups()[g].options());
      if (m.is_null()) {
        ASSERT_FALSE(ours.has_value());
        continue;
      }
      ASSERT_TRUE(ours.has_value());
      d = relative_difference(*ours, m.get<double>());
      worst_momentum = std::max(worst_momentum, d);
      ASSERT_LE(d, kTolerance) << "step " << step << " group " << g << ": momentum " << *ours << ", torch " << m;
    }
  }
  std::cout << "[ measured ] max relative difference vs torch: lr " << worst_lr << ", momentum " << worst_momentum
            << "\n";
  ::testing::Test::RecordProperty("max_rel_diff_lr", std::to_string(worst_lr));
  ::testing::Test::RecordProperty("max_rel_diff_momentum", std::to_string(worst_momentum));
}

inline json one_cycle(json args) {
  args["total_steps"] = kSteps;
  return {{"scheduler", "OneCycleLR"}, {"args", args}};
}

}  // namespace trainrun::schedule_reference
