// The augment policies as registered transforms: rand_augment, trivial_augment_wide and
// auto_augment (torchvision's RandAugment, TrivialAugmentWide and AutoAugment), drawing their ops,
// magnitudes and signs from the loader's per-example generator as torchvision does; their tables
// are in augment_policy_tables.cpp, their ops in augment_ops.cpp.
#include "components/data/transforms/augment.h"
#include "components/data/transforms/augment_common.h"
#include "components/data/transforms/augment_policy_tables.h"

#include <memory>
#include <stdexcept>

namespace trainrun {
namespace {

struct PolicyOptions {
  std::vector<double> fill;  // empty = 0
};

class RandAugment : public Transform {
 public:
  RandAugment(int64_t num_ops, int64_t magnitude, int64_t bins, PolicyOptions o)
      : num_ops_(num_ops), magnitude_(magnitude), bins_(bins), o_(std::move(o)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    at::Tensor img = x;
    const auto& ops = wide_ops();
    for (int64_t i = 0; i < num_ops_; ++i) {
      const OpSpace& op = ops[size_t(draw_index(int64_t(ops.size()), rng))];
      double m = op.has_magnitudes ? augment_magnitude(op.name, magnitude_, bins_, img.size(0), img.size(1)) : 0.0;
      if (op.signed_magnitude && draw_index(2, rng)) m *= -1.0;
      img = apply_augment_op(img, op.name, m, o_.fill);
    }
    return img;
  }

 private:
  int64_t num_ops_, magnitude_, bins_;
  PolicyOptions o_;
};

class TrivialAugmentWide : public Transform {
 public:
  TrivialAugmentWide(int64_t bins, PolicyOptions o) : bins_(bins), o_(std::move(o)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const auto& ops = wide_ops();
    const OpSpace& op = ops[size_t(draw_index(int64_t(ops.size()), rng))];
    double m = op.has_magnitudes
                   ? augment_magnitude(op.name, draw_index(bins_, rng), bins_, x.size(0), x.size(1), /*wide=*/true)
                   : 0.0;
    if (op.signed_magnitude && draw_index(2, rng)) m *= -1.0;
    return apply_augment_op(x, op.name, m, o_.fill);
  }

 private:
  int64_t bins_;
  PolicyOptions o_;
};

class AutoAugment : public Transform {
 public:
  AutoAugment(const std::string& policy, PolicyOptions o) : policy_(policy_named(policy)), o_(std::move(o)) {}
  // get_params: a sub-policy, two U[0, 1) probabilities, two signs; each step runs when its draw
  // is <= its probability, negated when its sign is 0.
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    const SubPolicy& sub = policy_[size_t(draw_index(int64_t(policy_.size()), rng))];
    const double probs[2] = {uniform01(rng), uniform01(rng)};
    const int64_t signs[2] = {draw_index(2, rng), draw_index(2, rng)};
    at::Tensor img = x;
    for (int i = 0; i < 2; ++i) {
      const PolicyStep& step = sub[size_t(i)];
      if (!(probs[i] <= step.p)) continue;
      const OpSpace op = op_space(step.op);  // a copy: g++ 14 takes the reference for one into the temporary name
      double m = step.magnitude_bin >= 0 ? augment_magnitude(op.name, step.magnitude_bin, 10, img.size(0), img.size(1)) : 0.0;
      if (op.signed_magnitude && signs[i] == 0) m *= -1.0;
      img = apply_augment_op(img, op.name, m, o_.fill);
    }
    return img;
  }

 private:
  const std::vector<SubPolicy>& policy_;
  PolicyOptions o_;
};

Schema policy_schema(Schema s) { return fill_param(std::move(s)); }

std::shared_ptr<Transform> make_rand_augment(const Config& c, const ModelInput&) {
  const auto bins = c.get<int64_t>("num_magnitude_bins"), m = c.get<int64_t>("magnitude");
  if (m >= bins) throw std::invalid_argument("magnitude: must be < num_magnitude_bins (" + std::to_string(bins) + ")");
  return std::make_shared<RandAugment>(c.get<int64_t>("num_ops"), m, bins, PolicyOptions{fill_of(c)});
}

}  // namespace

TRAINRUN_REGISTER(Transform, "rand_augment",
                  "num_ops random ops of RandAugment at one magnitude (torchvision RandAugment, NEAREST; before to_tensor)",
                  policy_schema(Schema()
                                    .add("num_ops", Type::Int, yaml("2"), "ops applied in sequence").min(0)
                                    .add("magnitude", Type::Int, yaml("9"), "magnitude bin, < num_magnitude_bins").min(0)
                                    .add("num_magnitude_bins", Type::Int, yaml("31"), "number of magnitude bins").min(2)),
                  make_rand_augment);

TRAINRUN_REGISTER(Transform, "trivial_augment_wide",
                  "one random op at a random magnitude (torchvision TrivialAugmentWide, NEAREST; before to_tensor)",
                  policy_schema(Schema().add("num_magnitude_bins", Type::Int, yaml("31"), "number of magnitude bins").min(2)),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<TrivialAugmentWide>(c.get<int64_t>("num_magnitude_bins"), PolicyOptions{fill_of(c)});
                  });

TRAINRUN_REGISTER(Transform, "auto_augment", "a random sub-policy of AutoAugment (torchvision AutoAugment, NEAREST; before to_tensor)",
                  policy_schema(Schema().add("policy", Type::String, yaml("imagenet"), "the learned policy")
                                    .choices({"imagenet", "cifar10", "svhn"})),
                  [](const Config& c, const ModelInput&) {
                    return std::make_shared<AutoAugment>(c.get<std::string>("policy"), PolicyOptions{fill_of(c)});
                  });

}  // namespace trainrun
