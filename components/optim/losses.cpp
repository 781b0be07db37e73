// Losses with torch.nn.functional's semantics (mean reduction), optionally class-weighted
// (`weight`, as F.cross_entropy's and F.nll_loss's): with class-index targets the mean is
// weighted, sum_i w[y_i] l_i / sum_i w[y_i]; with probability targets (N x C) each row's loss is
// -sum_c w_c p_ic log q_ic and the mean divides by N, exactly as torch does.
#include "components/optim/optim.h"

#include <torch/torch.h>

#include <numeric>
#include <stdexcept>

namespace trainrun {

std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts) {
  const int64_t samples = std::accumulate(counts.begin(), counts.end(), int64_t(0));
  std::vector<double> weights;
  for (int64_t c : counts) {
    if (c <= 0) throw std::invalid_argument("balanced class weights need at least one example of every class");
    // As sklearn: n_samples / (n_classes * np.bincount(y)), in float64.
    weights.push_back(double(samples) / (double(counts.size()) * double(c)));
  }
  return weights;
}

namespace {

const char* const kWeightDoc =
    "per-class weights, torch's weight=: a list of num_classes numbers >= 0, or balanced "
    "(sklearn's compute_class_weight('balanced'): n_samples / (n_classes * count) from the training split's "
    "labels); null = unweighted";

// `weight` as a float tensor (undefined when null). `balanced` is turned into its numbers by the
// job, which knows the training split; a loss made without one cannot weigh its classes.
at::Tensor class_weights(const Config& c) {
  if (c.is_null("weight")) return {};
  if (c.is_word("weight", "balanced"))
    throw std::invalid_argument(c.path() + ".weight: balanced needs the training split's label counts; give the weights");
  const auto w = c.get<std::vector<double>>("weight");
  return torch::tensor(w, torch::kFloat);
}

// The weights in the output's dtype and on its device (a no-op after the first batch on CPU; a
// few bytes copied per batch on CUDA).
at::Tensor weights_for(const at::Tensor& weight, const at::Tensor& output) {
  return weight.defined() ? weight.to(output.device(), output.scalar_type()) : weight;
}

class CrossEntropy : public Loss {
 public:
  CrossEntropy(double smoothing, at::Tensor weight) : smoothing_(smoothing), weight_(std::move(weight)) {}
  bool takes_probabilities() const override { return true; }
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool) const override {
    // log_softmax is idempotent, so log-probability outputs give the same loss as logits.
    // Probability targets (N x C float, a batch transform's) as F.cross_entropy takes them.
    auto options = torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing_);
    if (weight_.defined()) options.weight(weights_for(weight_, output));
    return torch::nn::functional::cross_entropy(output, target, options);
  }

 private:
  double smoothing_;
  at::Tensor weight_;
};

class Nll : public Loss {
 public:
  explicit Nll(at::Tensor weight) : weight_(std::move(weight)) {}
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const override {
    return torch::nll_loss(log_probs ? output : torch::log_softmax(output, 1), target, weights_for(weight_, output));
  }

 private:
  at::Tensor weight_;
};

}  // namespace

TRAINRUN_REGISTER(Loss, "cross_entropy", "F.cross_entropy on the model's output",
                  Schema()
                      .add("label_smoothing", Type::Float, yaml("0.0"), "label smoothing (0 = off)").range(0, 1)
                      .add("weight", Type::FloatList, YAML::Node(), kWeightDoc).min(0).choices({"balanced"}).nullable(),
                  [](const Config& c) {
                    return std::make_shared<CrossEntropy>(c.get<double>("label_smoothing"), class_weights(c));
                  });

TRAINRUN_REGISTER(Loss, "nll", "F.nll_loss on log-probabilities (log_softmax applied if the model gives logits)",
                  Schema().add("weight", Type::FloatList, YAML::Node(), kWeightDoc).min(0).choices({"balanced"}).nullable(),
                  [](const Config& c) { return std::make_shared<Nll>(class_weights(c)); });

}  // namespace trainrun
