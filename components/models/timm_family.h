// What timm's families (ResNet, ConvNeXt, ViT, EfficientNet/MobileNetV3) share here: the recipe
// keys every one takes and reads alike, and timm.layers' drop_path and trunc_normal_.
#pragma once

#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace trainrun {

// What a recipe chooses for every family; each family's options derive from it.
struct TimmKeys {
  int64_t num_classes = 1000;
  double drop_rate = 0.0;       // dropout before the classifier (timm's drop_rate)
  double drop_path_rate = 0.0;  // stochastic depth (timm's drop_path_rate); each family spreads it over its blocks
};

// num_classes (auto = the dataset's) and pretrained, the first keys `describe models/NAME` prints.
// `key_names` says whose state_dict names a .safetensors file may use ("timm", "torchvision /
// timm"); `more` ends the pretrained doc.
Schema& add_timm_head_keys(Schema& schema, const std::string& key_names, const std::string& more = "");

// drop_rate in [0, 1] and drop_path_rate in [0, 1), after the family's own keys. The empty
// drop_path doc is the linear schedule ResNet, ConvNeXt and ViT share.
Schema& add_timm_drop_keys(Schema& schema, const std::string& drop_rate_doc, const std::string& drop_path_doc = "");

// The three TimmKeys values of a checked recipe section.
void read_timm_keys(const Config& config, TimmKeys& keys);

// timm's drop_path(x, p, training, scale_by_keep=True): in training, zeroes a whole sample's
// residual branch with probability p and divides the kept ones by 1 - p, drawing one Bernoulli
// per sample (x.new_empty((N, 1, ...)).bernoulli_(1 - p)) so the RNG stream is timm's.
at::Tensor drop_path(const at::Tensor& x, double p, bool training);

// timm's trunc_normal_(tensor, mean=0, std, a=-2, b=2) (timm.layers.weight_init; the bounds are on
// the value, not in stds): uniform_ over [2 cdf(a/std) - 1, 2 cdf(b/std) - 1], erfinv_, scale,
// add the mean, clamp, op for op, so a seeded RNG gives timm's values (LibTorch 1.13 has no nn::init for it).
void trunc_normal_(at::Tensor t, double std, double a = -2.0, double b = 2.0);

}  // namespace trainrun
