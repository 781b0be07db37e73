// The augment policies' tables, as torchvision's autoaugment.py has them: the ops with their
// magnitudes (_augmentation_space of RandAugment and TrivialAugmentWide) and AutoAugment's learned
// sub-policies (ImageNet, CIFAR-10, SVHN).
#include "components/data/transforms/augment_policy_tables.h"

#include "components/data/transforms/augment.h"
#include "components/data/transforms/augment_common.h"

#include <map>
#include <stdexcept>

namespace trainrun {

// _augmentation_space's keys in order (RandAugment and TrivialAugmentWide; AutoAugment names its
// ops in its policies and adds Invert).
const std::vector<OpSpace>& wide_ops() {
  static const std::vector<OpSpace> ops = {
      {"Identity", false, false},   {"ShearX", true, true},     {"ShearY", true, true},
      {"TranslateX", true, true},   {"TranslateY", true, true}, {"Rotate", true, true},
      {"Brightness", true, true},   {"Color", true, true},      {"Contrast", true, true},
      {"Sharpness", true, true},    {"Posterize", false, true}, {"Solarize", false, true},
      {"AutoContrast", false, false}, {"Equalize", false, false}};
  return ops;
}

const OpSpace& op_space(const std::string& name) {
  static const OpSpace invert{"Invert", false, false};
  if (name == "Invert") return invert;
  for (auto& op : wide_ops())
    if (op.name == name) return op;
  throw std::invalid_argument("unknown augment op '" + name + "'");
}

// AutoAugmentPolicy's sub-policies, as torchvision lists them.
const std::vector<SubPolicy>& policy_named(const std::string& name) {
  static const std::map<std::string, std::vector<SubPolicy>> policies = {
      {"imagenet",
       {{{{"Posterize", 0.4, 8}, {"Rotate", 0.6, 9}}},          {{{"Solarize", 0.6, 5}, {"AutoContrast", 0.6, -1}}},
        {{{"Equalize", 0.8, -1}, {"Equalize", 0.6, -1}}},       {{{"Posterize", 0.6, 7}, {"Posterize", 0.6, 6}}},
        {{{"Equalize", 0.4, -1}, {"Solarize", 0.2, 4}}},        {{{"Equalize", 0.4, -1}, {"Rotate", 0.8, 8}}},
        {{{"Solarize", 0.6, 3}, {"Equalize", 0.6, -1}}},        {{{"Posterize", 0.8, 5}, {"Equalize", 1.0, -1}}},
        {{{"Rotate", 0.2, 3}, {"Solarize", 0.6, 8}}},           {{{"Equalize", 0.6, -1}, {"Posterize", 0.4, 6}}},
        {{{"Rotate", 0.8, 8}, {"Color", 0.4, 0}}},              {{{"Rotate", 0.4, 9}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.0, -1}, {"Equalize", 0.8, -1}}},       {{{"Invert", 0.6, -1}, {"Equalize", 1.0, -1}}},
        {{{"Color", 0.6, 4}, {"Contrast", 1.0, 8}}},            {{{"Rotate", 0.8, 8}, {"Color", 1.0, 2}}},
        {{{"Color", 0.8, 8}, {"Solarize", 0.8, 7}}},            {{{"Sharpness", 0.4, 7}, {"Invert", 0.6, -1}}},
        {{{"ShearX", 0.6, 5}, {"Equalize", 1.0, -1}}},          {{{"Color", 0.4, 0}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.4, -1}, {"Solarize", 0.2, 4}}},        {{{"Solarize", 0.6, 5}, {"AutoContrast", 0.6, -1}}},
        {{{"Invert", 0.6, -1}, {"Equalize", 1.0, -1}}},         {{{"Color", 0.6, 4}, {"Contrast", 1.0, 8}}},
        {{{"Equalize", 0.8, -1}, {"Equalize", 0.6, -1}}}}},
      {"cifar10",
       {{{{"Invert", 0.1, -1}, {"Contrast", 0.2, 6}}},          {{{"Rotate", 0.7, 2}, {"TranslateX", 0.3, 9}}},
        {{{"Sharpness", 0.8, 1}, {"Sharpness", 0.9, 3}}},       {{{"ShearY", 0.5, 8}, {"TranslateY", 0.7, 9}}},
        {{{"AutoContrast", 0.5, -1}, {"Equalize", 0.9, -1}}},   {{{"ShearY", 0.2, 7}, {"Posterize", 0.3, 7}}},
        {{{"Color", 0.4, 3}, {"Brightness", 0.6, 7}}},          {{{"Sharpness", 0.3, 9}, {"Brightness", 0.7, 9}}},
        {{{"Equalize", 0.6, -1}, {"Equalize", 0.5, -1}}},       {{{"Contrast", 0.6, 7}, {"Sharpness", 0.6, 5}}},
        {{{"Color", 0.7, 7}, {"TranslateX", 0.5, 8}}},          {{{"Equalize", 0.3, -1}, {"AutoContrast", 0.4, -1}}},
        {{{"TranslateY", 0.4, 3}, {"Sharpness", 0.2, 6}}},      {{{"Brightness", 0.9, 6}, {"Color", 0.2, 8}}},
        {{{"Solarize", 0.5, 2}, {"Invert", 0.0, -1}}},          {{{"Equalize", 0.2, -1}, {"AutoContrast", 0.6, -1}}},
        {{{"Equalize", 0.2, -1}, {"Equalize", 0.6, -1}}},       {{{"Color", 0.9, 9}, {"Equalize", 0.6, -1}}},
        {{{"AutoContrast", 0.8, -1}, {"Solarize", 0.2, 8}}},    {{{"Brightness", 0.1, 3}, {"Color", 0.7, 0}}},
        {{{"Solarize", 0.4, 5}, {"AutoContrast", 0.9, -1}}},    {{{"TranslateY", 0.9, 9}, {"TranslateY", 0.7, 9}}},
        {{{"AutoContrast", 0.9, -1}, {"Solarize", 0.8, 3}}},    {{{"Equalize", 0.8, -1}, {"Invert", 0.1, -1}}},
        {{{"TranslateY", 0.7, 9}, {"AutoContrast", 0.9, -1}}}}},
      {"svhn",
       {{{{"ShearX", 0.9, 4}, {"Invert", 0.2, -1}}},            {{{"ShearY", 0.9, 8}, {"Invert", 0.7, -1}}},
        {{{"Equalize", 0.6, -1}, {"Solarize", 0.6, 6}}},        {{{"Invert", 0.9, -1}, {"Equalize", 0.6, -1}}},
        {{{"Equalize", 0.6, -1}, {"Rotate", 0.9, 3}}},          {{{"ShearX", 0.9, 4}, {"AutoContrast", 0.8, -1}}},
        {{{"ShearY", 0.9, 8}, {"Invert", 0.4, -1}}},            {{{"ShearY", 0.9, 5}, {"Solarize", 0.2, 6}}},
        {{{"Invert", 0.9, -1}, {"AutoContrast", 0.8, -1}}},     {{{"Equalize", 0.6, -1}, {"Rotate", 0.9, 3}}},
        {{{"ShearX", 0.9, 4}, {"Solarize", 0.3, 3}}},           {{{"ShearY", 0.8, 8}, {"Invert", 0.7, -1}}},
        {{{"Equalize", 0.9, -1}, {"TranslateY", 0.6, 6}}},      {{{"Invert", 0.9, -1}, {"Equalize", 0.6, -1}}},
        {{{"Contrast", 0.3, 3}, {"Rotate", 0.8, 4}}},           {{{"Invert", 0.8, -1}, {"TranslateY", 0.0, 2}}},
        {{{"ShearY", 0.7, 6}, {"Solarize", 0.4, 8}}},           {{{"Invert", 0.6, -1}, {"Rotate", 0.8, 4}}},
        {{{"ShearY", 0.3, 7}, {"TranslateX", 0.9, 3}}},         {{{"ShearX", 0.1, 6}, {"Invert", 0.6, -1}}},
        {{{"Solarize", 0.7, 2}, {"TranslateY", 0.6, 7}}},       {{{"ShearY", 0.8, 4}, {"Invert", 0.8, -1}}},
        {{{"ShearX", 0.7, 9}, {"TranslateY", 0.8, 3}}},         {{{"ShearY", 0.8, 5}, {"AutoContrast", 0.7, -1}}},
        {{{"ShearX", 0.7, 2}, {"Invert", 0.1, -1}}}}}};
  return policies.at(name);
}

double augment_magnitude(const std::string& op, int64_t bin, int64_t num_bins, int64_t height, int64_t width, bool wide) {
  auto at_bin = [&](const at::Tensor& t) { return double(t[bin].item<float>()); };
  const double top = wide ? 0.99 : 0.9;
  if (op == "ShearX" || op == "ShearY") return at_bin(float_linspace(0.0, wide ? 0.99 : 0.3, num_bins));
  if (op == "TranslateX") return at_bin(float_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * double(width), num_bins));
  if (op == "TranslateY") return at_bin(float_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * double(height), num_bins));
  if (op == "Rotate") return at_bin(float_linspace(0.0, wide ? 135.0 : 30.0, num_bins));
  if (op == "Brightness" || op == "Color" || op == "Contrast" || op == "Sharpness")
    return at_bin(float_linspace(0.0, top, num_bins));
  if (op == "Posterize") {
    at::Tensor bins = 8 - (at::arange(num_bins) / (double(num_bins - 1) / (wide ? 6.0 : 4.0))).round().to(at::kInt);
    return double(bins[bin].item<int>());
  }
  if (op == "Solarize") return at_bin(float_linspace(255.0, 0.0, num_bins));
  throw std::invalid_argument("augment op '" + op + "' has no magnitudes");
}

}  // namespace trainrun
