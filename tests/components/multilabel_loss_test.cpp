// The multi-label losses (bce_with_logits, asymmetric) against the real timm's BinaryCrossEntropy
// and AsymmetricLossMultiLabel, which call torch's F.binary_cross_entropy_with_logits: the
// numbers in tests/data/multilabel_losses.json, made by tests/py/multilabel_loss_ref.py at
// the timm commit the file names, on inputs both sides build from one formula (float64).
#include "components/optim/optim.h"

#include "make_dataset.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>

namespace trainrun {
namespace {

constexpr int64_t kRows = 6, kClasses = 5;

// multilabel_loss_ref.py's formula_logits / formula_targets.
at::Tensor formula_logits() {
  at::Tensor i = torch::arange(kRows * kClasses, torch::kDouble).reshape({kRows, kClasses});
  return (torch::fmod(i * 7, 11) - 5) * 0.75 + torch::fmod(i, 3) * 0.125;
}

at::Tensor formula_targets(const std::string& kind) {
  at::Tensor i = torch::arange(kRows * kClasses, torch::kDouble).reshape({kRows, kClasses});
  at::Tensor hot = torch::fmod(i * 5, 7).lt(3).to(torch::kDouble);
  if (kind == "multi-hot") return hot;
  if (kind == "soft") return hot * 0.75 + hot.flip({0}) * 0.25;
  return torch::fmod(torch::arange(kRows, torch::kLong) * 3, kClasses);
}

nlohmann::json reference() {
  std::ifstream in(test::source("tests/data/multilabel_losses.json"));
  return nlohmann::json::parse(in);
}

// The loss with `config`'s keys and the schema's defaults for the others, as a recipe makes it.
std::shared_ptr<Loss> make_loss(const std::string& name, const nlohmann::json& config) {
  const auto& entry = Registry<Loss>::instance().get(name);
  return entry.make(Config(test::with_defaults(entry.schema, YAML::Load(config.empty() ? "{}" : config.dump())), "train.loss"));
}

TEST(MultilabelLoss, EqualsTimmsOnTheSameLogitsAndTargets) {
  const nlohmann::json ref = reference();
  ASSERT_EQ(ref["cases"].size(), 10u);
  double worst = 0;
  for (const auto& c : ref["cases"]) {
    const std::string what = c["name"].get<std::string>();
    auto loss = make_loss(c["loss"], c["config"]);
    EXPECT_TRUE(loss->multilabel()) << what;
    EXPECT_TRUE(loss->takes_probabilities()) << what;
    at::Tensor x = formula_logits().requires_grad_();
    at::Tensor value = (*loss)(x, formula_targets(c["targets"]), false);
    value.backward();
    const double want = c["value"].get<double>();
    EXPECT_NEAR(value.item<double>(), want, 1e-12 * std::abs(want)) << what;
    std::vector<double> flat;
    for (const auto& row : c["grad"])
      for (const auto& v : row) flat.push_back(v.get<double>());
    const at::Tensor want_grad = torch::tensor(flat, torch::kDouble).reshape({kRows, kClasses});
    const double grad_diff = (x.grad() - want_grad).abs().max().item<double>();
    EXPECT_LE(grad_diff, 1e-14) << what;
    worst = std::max({worst, std::abs(value.item<double>() - want) / std::abs(want), grad_diff});
  }
  std::cout << "[ measured ] bce_with_logits / asymmetric vs timm " << ref["timm_commit"].get<std::string>().substr(0, 7)
            << " (10 cases, float64): max relative loss or absolute gradient difference " << worst << "\n";
}

// Each key changes the number: a loss that ignored it would not pass the test above by chance.
TEST(MultilabelLoss, EveryKeyMatters) {
  const at::Tensor x = formula_logits();
  auto value = [&](const std::string& name, const std::string& config, const std::string& targets) {
    return (*make_loss(name, nlohmann::json::parse(config)))(x, formula_targets(targets), false).item<double>();
  };
  const double plain = value("bce_with_logits", "{}", "soft");
  EXPECT_GT(std::abs(value("bce_with_logits", R"({"target_threshold": 0.5})", "soft") - plain), 1e-3);
  EXPECT_GT(std::abs(value("bce_with_logits", R"({"pos_weight": [1, 1, 2, 1, 1]})", "soft") - plain), 1e-3);
  EXPECT_GT(std::abs(value("bce_with_logits", R"({"label_smoothing": 0.1})", "index") -
                     value("bce_with_logits", "{}", "index")), 1e-3);
  const double asl = value("asymmetric", "{}", "multi-hot");
  for (const char* config : {R"({"gamma_neg": 2.0})", R"({"gamma_pos": 0.0})", R"({"clip": 0.0})"})
    EXPECT_GT(std::abs(value("asymmetric", config, "multi-hot") - asl), 1e-3) << config;
  EXPECT_NEAR(value("asymmetric", R"({"reduction": "mean"})", "multi-hot"), asl / double(kRows), 1e-12);
}

// A model ending in log_softmax (basicnet) gives log-probabilities, not logits: one line.
TEST(MultilabelLoss, RefusesLogProbabilities) {
  for (const char* name : {"bce_with_logits", "asymmetric"}) {
    auto loss = make_loss(name, nlohmann::json::object());
    try {
      (*loss)(formula_logits(), formula_targets("multi-hot"), true);
      ADD_FAILURE() << name << " took log-probabilities";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("takes logits"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainrun
