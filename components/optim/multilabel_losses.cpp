// Losses on one sigmoid per class (train.task: multilabel, and timm's --bce-loss for single-label
// runs): torch's F.binary_cross_entropy_with_logits as timm's BinaryCrossEntropy calls it, and
// timm's AsymmetricLossMultiLabel (timm/loss/binary_cross_entropy.py, asymmetric_loss.py).
// Targets are multi-hot rows (N x C float, a multilabel dataset's or mixed by a batch transform)
// or class indices (N int64), which become timm's smoothed one-hot rows.
#include "components/optim/optim.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

// timm's BinaryCrossEntropy.forward before the loss: class indices become rows of
// off = smoothing / C and on = 1 - smoothing + off (dense targets are used as they are, timm
// assuming any smoothing was applied upstream); then, with a target threshold, target > t as 0/1.
at::Tensor dense_targets(const at::Tensor& output, const at::Tensor& target, double smoothing,
                         std::optional<double> threshold) {
  at::Tensor t = target;
  if (target.sizes() != output.sizes()) {
    const double off = smoothing / double(output.size(-1));
    t = at::full(output.sizes(), off, output.options()).scatter_(1, target.to(at::kLong).view({-1, 1}), 1.0 - smoothing + off);
  } else {
    t = target.to(output.scalar_type());
  }
  if (threshold) t = t.gt(*threshold).to(t.scalar_type());
  return t;
}

class BceWithLogits : public Loss {
 public:
  BceWithLogits(double smoothing, std::optional<double> threshold, at::Tensor pos_weight)
      : smoothing_(smoothing), threshold_(threshold), pos_weight_(std::move(pos_weight)) {}
  bool takes_probabilities() const override { return true; }
  bool multilabel() const override { return true; }
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const override {
    if (log_probs)
      throw std::invalid_argument("bce_with_logits takes logits, but this model ends in log_softmax; use a model with a plain head");
    auto options = torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions();
    if (pos_weight_.defined()) options.pos_weight(pos_weight_.to(output.device(), output.scalar_type()));
    return torch::nn::functional::binary_cross_entropy_with_logits(
        output, dense_targets(output, target, smoothing_, threshold_), options);
  }

 private:
  double smoothing_;
  std::optional<double> threshold_;
  at::Tensor pos_weight_;
};

// AsymmetricLossMultiLabel.forward, line for line: the clipped negative probability, the two
// log terms at eps, the focusing weight (1 - pt)^gamma; timm sums over the batch and the classes
// (reduction: sum), `mean` divides that by the batch size.
class Asymmetric : public Loss {
 public:
  Asymmetric(double gamma_neg, double gamma_pos, double clip, double eps, bool mean)
      : gamma_neg_(gamma_neg), gamma_pos_(gamma_pos), clip_(clip), eps_(eps), mean_(mean) {}
  bool takes_probabilities() const override { return true; }
  bool multilabel() const override { return true; }
  at::Tensor operator()(const at::Tensor& output, const at::Tensor& target, bool log_probs) const override {
    if (log_probs)
      throw std::invalid_argument("asymmetric takes logits, but this model ends in log_softmax; use a model with a plain head");
    const at::Tensor y = dense_targets(output, target, 0.0, std::nullopt);
    const at::Tensor xs_pos = torch::sigmoid(output);
    at::Tensor xs_neg = 1 - xs_pos;
    if (clip_ > 0) xs_neg = (xs_neg + clip_).clamp_max(1);
    at::Tensor loss = y * torch::log(xs_pos.clamp_min(eps_)) + (1 - y) * torch::log(xs_neg.clamp_min(eps_));
    if (gamma_neg_ > 0 || gamma_pos_ > 0) {
      const at::Tensor pt = xs_pos * y + xs_neg * (1 - y);
      loss = loss * torch::pow(1 - pt, gamma_pos_ * y + gamma_neg_ * (1 - y));
    }
    at::Tensor total = -loss.sum();
    return mean_ ? total / double(output.size(0)) : total;
  }

 private:
  double gamma_neg_, gamma_pos_, clip_, eps_;
  bool mean_;
};

at::Tensor pos_weight_of(const Config& c) {
  if (c.is_null("pos_weight")) return {};
  if (c.is_word("pos_weight", "auto"))
    throw std::invalid_argument(c.path() + ".pos_weight: auto needs the training split's label counts; give the weights");
  return torch::tensor(c.get<std::vector<double>>("pos_weight"), torch::kFloat);
}

}  // namespace

TRAINRUN_REGISTER(Loss, "bce_with_logits",
                  "F.binary_cross_entropy_with_logits, one sigmoid per class, as timm's BinaryCrossEntropy "
                  "(multi-hot targets; class indices become smoothed one-hot rows)",
                  Schema()
                      .add("label_smoothing", Type::Float, yaml("0.0"),
                           "for class-index targets: off = s / C, on = 1 - s + off (timm's --smoothing with --bce-loss); "
                           "multi-hot targets are used as they are")
                      .range(0, 1)
                      .add("target_threshold", Type::Float, YAML::Node(),
                           "targets above it become 1, the rest 0 (timm's --bce-target-thresh); null = off")
                      .range(0, 1).nullable()
                      .add("pos_weight", Type::FloatList, YAML::Node(),
                           "weight of each class's positive term, torch's pos_weight=: a list of num_classes numbers "
                           ">= 0, or auto = negatives / positives of each class over the training split; null = 1")
                      .min(0).choices({"auto"}).nullable(),
                  [](const Config& c) {
                    std::optional<double> threshold;
                    if (!c.is_null("target_threshold")) threshold = c.get<double>("target_threshold");
                    return std::make_shared<BceWithLogits>(c.get<double>("label_smoothing"), threshold, pos_weight_of(c));
                  });

TRAINRUN_REGISTER(Loss, "asymmetric",
                  "timm's AsymmetricLossMultiLabel (Ridnik et al. 2021): focal weights per side, clipped negatives",
                  Schema()
                      .add("gamma_neg", Type::Float, yaml("4.0"), "focusing exponent of the negative terms").min(0)
                      .add("gamma_pos", Type::Float, yaml("1.0"), "focusing exponent of the positive terms").min(0)
                      .add("clip", Type::Float, yaml("0.05"), "probability margin added to the negatives (0 = off)")
                      .range(0, 1)
                      .add("eps", Type::Float, yaml("1e-8"), "the probabilities' floor inside the logs").above(0)
                      .add("reduction", Type::String, YAML::Node("sum"),
                           "sum over the batch and the classes (timm's), or mean = that sum / batch size")
                      .choices({"sum", "mean"}),
                  [](const Config& c) {
                    return std::make_shared<Asymmetric>(c.get<double>("gamma_neg"), c.get<double>("gamma_pos"),
                                                        c.get<double>("clip"), c.get<double>("eps"),
                                                        c.get<std::string>("reduction") == "mean");
                  });

}  // namespace trainrun
