// The augment policies' tables (augment_policy_tables.cpp), internal to components/data: the ops
// RandAugment and TrivialAugmentWide draw from, and AutoAugment's sub-policies. The magnitudes are
// augment_magnitude's (augment.h).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace trainrun {

struct OpSpace {
  std::string name;
  bool signed_magnitude;
  bool has_magnitudes;
};

// _augmentation_space's keys in order (RandAugment and TrivialAugmentWide; AutoAugment names its
// ops in its policies and adds Invert).
const std::vector<OpSpace>& wide_ops();

// The op of that name, Invert included; throws for an unknown one.
const OpSpace& op_space(const std::string& name);

struct PolicyStep {
  const char* op;
  double p;
  int magnitude_bin;  // -1: none
};
using SubPolicy = std::array<PolicyStep, 2>;

// AutoAugmentPolicy's sub-policies, as torchvision lists them ("imagenet", "cifar10", "svhn").
const std::vector<SubPolicy>& policy_named(const std::string& name);

}  // namespace trainrun
