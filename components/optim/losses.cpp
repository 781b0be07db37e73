// Losses with torch.nn.functional's semantics (mean reduction).
#include "components/optim/optim.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

class CrossEntropy : public Loss {
 public:
  explicit CrossEntropy(double smoothing) : smoothing_(smoothing) {}
  bool takes_probabilities() const override { return true; }
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool) const override {
    // log_softmax is idempotent, so log-probability outputs give the same loss as logits.
    // Probability targets (N x C float, a batch transform's) as F.cross_entropy takes them.
    return torch::nn::functional::cross_entropy(
        output, target, torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing_));
  }

 private:
  double smoothing_;
};

class Nll : public Loss {
 public:
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const override {
    return torch::nll_loss(log_probs ? output : torch::log_softmax(output, 1), target);
  }
};

}  // namespace

TRAINRUN_REGISTER(Loss, "cross_entropy", "F.cross_entropy on the model's output",
                  Schema().add("label_smoothing", Type::Float, yaml("0.0"), "label smoothing (0 = off)").range(0, 1),
                  [](const Config& c) { return std::make_shared<CrossEntropy>(c.get<double>("label_smoothing")); });

TRAINRUN_REGISTER(Loss, "nll", "F.nll_loss on log-probabilities (log_softmax applied if the model gives logits)",
                  Schema(), [](const Config&) { return std::make_shared<Nll>(); });

}  // namespace trainrun
