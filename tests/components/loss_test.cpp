// Class-weighted losses (train.loss.weight) against torch.nn.functional on python3-torch, and the
// `balanced` weights against sklearn's compute_class_weight.
#include "components/data/dataset.h"
#include "components/optim/optim.h"
#include "support/safetensors.h"

#include "support/python_worker.h"
#include "test_util.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace trainrun {
namespace {

struct WeightedLossCase {
  std::string loss;      // cross_entropy | nll
  double smoothing;
  bool soft;             // probability targets (mixup's) rather than class indices
};

// F.cross_entropy(weight=) / F.nll_loss(weight=) on the same logits and targets: the loss and its
// gradient with respect to the logits. Returns the largest difference seen, for the log.
double expect_weighted_loss_is_torchs(const WeightedLossCase& c, const at::Tensor& weight) {
  const std::string what = c.loss + (c.soft ? " soft" : " hard") + " smoothing " + std::to_string(c.smoothing);
  test::TempDir dir;
  torch::manual_seed(11);
  at::Tensor logits = torch::randn({8, 4}) * 2;
  at::Tensor target = c.soft ? torch::softmax(torch::randn({8, 4}) * 2, 1) : torch::randint(0, 4, {8}, torch::kLong);
  save_safetensors(dir / "in.safetensors", {{"logits", logits}, {"target", target}, {"weight", weight}});
  std::vector<std::string> args = {dir / "in.safetensors", std::to_string(c.smoothing)};
  if (c.loss == "nll") args.push_back("nll");
  auto py = test::python_reference("cross_entropy.py", args);
  EXPECT_EQ(py.code, 0) << py.err;
  if (py.code != 0) return 1;
  auto expected = nlohmann::json::parse(py.out);
  const double want = expected["loss"].get<double>();
  std::vector<float> flat;
  for (auto& row : expected["grad"])
    for (auto& v : row) flat.push_back(v.get<float>());
  const at::Tensor want_grad = torch::tensor(flat).reshape({8, 4});

  YAML::Node cfg = YAML::Load(c.loss == "nll" ? "{}" : "{label_smoothing: " + std::to_string(c.smoothing) + "}");
  cfg["weight"] = std::vector<double>(weight.data_ptr<float>(), weight.data_ptr<float>() + weight.numel());
  auto loss = Registry<Loss>::instance().get(c.loss).make(Config(cfg, "train.loss"));
  at::Tensor x = logits.clone().requires_grad_();
  at::Tensor value = (*loss)(x, target, false);
  value.backward();
  EXPECT_NEAR(value.item<double>(), want, 1e-6 * std::abs(want)) << what;
  const double grad_diff = (x.grad() - want_grad).abs().max().item<double>();
  EXPECT_LE(grad_diff, 1e-7) << what;
  // The weights matter at this size, so the comparison checks them.
  cfg.remove("weight");
  auto plain = Registry<Loss>::instance().get(c.loss).make(Config(cfg, "train.loss"));
  EXPECT_GT(std::abs((*plain)(logits, target, false).item<double>() - want), 1e-2) << what;
  return std::max(std::abs(value.item<double>() - want), grad_diff);
}

// Index targets: torch's weighted mean, sum w[y_i] l_i / sum w[y_i] (with label smoothing its
// smoothing term over the same denominator); probability targets: -sum_c w_c p_ic log q_ic,
// averaged over the N rows. A zero weight is allowed (a class left out).
TEST(Loss, ClassWeightsAreTorchsForHardAndSoftTargets) {
  const at::Tensor weight = torch::tensor({0.25f, 1.5f, 3.0f, 0.0f});
  double worst = 0;
  for (const WeightedLossCase& c : {WeightedLossCase{"cross_entropy", 0.0, false}, {"cross_entropy", 0.1, false},
                                    {"cross_entropy", 0.0, true}, {"cross_entropy", 0.1, true}, {"nll", 0.0, false}})
    worst = std::max(worst, expect_weighted_loss_is_torchs(c, weight));
  std::cout << "[ measured ] weighted cross_entropy / nll vs torch.nn.functional (5 cases): max abs difference "
            << worst << "\n";
}

// Class-index outputs that are log-probabilities (basicnet) give the same weighted loss.
TEST(Loss, ClassWeightsTakeLogProbabilitiesToo) {
  torch::manual_seed(2);
  at::Tensor logits = torch::randn({6, 3}), target = torch::randint(0, 3, {6}, torch::kLong);
  for (std::string name : {"cross_entropy", "nll"}) {
    YAML::Node cfg = YAML::Load("{weight: [0.5, 2.0, 1.0]}");
    if (name == "cross_entropy") cfg["label_smoothing"] = 0.0;
    auto loss = Registry<Loss>::instance().get(name).make(Config(cfg, "train.loss"));
    EXPECT_NEAR((*loss)(torch::log_softmax(logits, 1), target, true).item<double>(),
                (*loss)(logits, target, false).item<double>(), 1e-6)
        << name;
  }
}

class LossTestLabels : public Dataset {
 public:
  explicit LossTestLabels(std::vector<int64_t> labels) : labels_(std::move(labels)) {}
  std::size_t size() const override { return labels_.size(); }
  Example get(std::size_t i) const override { return {torch::zeros({1, 1, 1}, torch::kUInt8), label(i), {}}; }
  int64_t label(std::size_t i) const override { return labels_.at(i); }

 private:
  std::vector<int64_t> labels_;
};

// train.loss.weight: balanced is sklearn's compute_class_weight('balanced') on the training
// labels (python3-sklearn, a test dependency in scripts/setup.sh), to the last bit.
TEST(Loss, BalancedWeightsAreSklearns) {
  torch::manual_seed(5);
  // Five classes with 1 to 97 examples, shuffled.
  std::vector<int64_t> labels;
  const std::vector<int64_t> counts_in = {97, 31, 7, 1, 12};
  for (std::size_t c = 0; c < counts_in.size(); ++c) labels.insert(labels.end(), std::size_t(counts_in[c]), int64_t(c));
  at::Tensor perm = torch::randperm(int64_t(labels.size()));
  std::vector<int64_t> shuffled;
  for (int64_t k = 0; k < perm.numel(); ++k) shuffled.push_back(labels[std::size_t(perm[k].item<int64_t>())]);

  const std::vector<int64_t> counts = class_counts(LossTestLabels(shuffled), 5);
  EXPECT_EQ(counts, counts_in);
  const std::vector<double> weights = balanced_class_weights(counts);

  test::TempDir dir;
  test::write_file(dir / "labels.json", nlohmann::json(shuffled).dump());
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/class_weight.py") + " " +
                      (dir / "labels.json") + " 5");
  ASSERT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(weights, nlohmann::json::parse(py.out).get<std::vector<double>>());
  std::cout << "[ measured ] balanced weights " << nlohmann::json(weights).dump() << ", sklearn " << py.out;

  EXPECT_THROW(balanced_class_weights({3, 0, 2}), std::invalid_argument);  // sklearn refuses an absent class too
  EXPECT_THROW(class_counts(LossTestLabels({0, 5}), 5), DataError);        // a label past num_classes
}

}  // namespace
}  // namespace trainrun
