// What timm's families (ResNet, ConvNeXt, ViT, EfficientNet/MobileNetV3) share here: the recipe
// keys every one takes and reads alike, the shape of their published weights' settings (timm's
// default_cfgs), and timm.layers' drop_path and trunc_normal_.
#pragma once

#include "components/models/model.h"
#include "registry/registry.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

// What a recipe chooses for every family; each family's options derive from it.
struct TimmKeys {
  int64_t num_classes = 1000;
  double drop_rate = 0.0;       // dropout before the classifier (timm's drop_rate)
  double drop_path_rate = 0.0;  // stochastic depth (timm's drop_path_rate); each family spreads it over its blocks
};

// A family's variants, as its @register_model functions: each registered name and its model_args.
template <class Args>
using Variants = std::vector<std::pair<std::string, Args>>;

enum class MeanStd { ImageNet, Inception };  // timm's IMAGENET_DEFAULT_MEAN/STD, IMAGENET_INCEPTION_MEAN/STD (0.5)

// One entry of a family's default_cfgs: the weights `model.pretrained: true` loads for a name (its
// default tag) and the pretrained_cfg they were trained and evaluated with. Every tag here is an
// ImageNet-1k classifier, so timm's num_classes (1000) is not repeated.
struct PretrainedCfg {
  std::string tag;  // NAME.TAG, published at hf-hub:timm/NAME.TAG
  int64_t input_size = 224;  // H = W
  double crop_pct = 0.875;
  std::string interpolation = "bicubic";
  MeanStd mean_std = MeanStd::ImageNet;
};

// The entry of `cfgs` whose tag is NAME.something: timm's default tag comes first in default_cfgs,
// and a table here holds that one only.
const PretrainedCfg& default_cfg(const std::vector<PretrainedCfg>& cfgs, const std::string& name);
std::string hub_id(const PretrainedCfg& cfg);           // hf-hub:timm/NAME.TAG
InputConfig input_config(const PretrainedCfg& cfg);     // mean, std, input size, the eval resize and crop
std::string describe_input(const PretrainedCfg& cfg);   // "ImageNet mean/std, 224x224", ending a description

// Registers each of a family's variants under its name, with the weights of its default tag in
// `cfgs`: describe(args, weights) its description, made from the data; schema(args, weights) and
// factory(args, weights) what TRAINRUN_REGISTER takes. Called once per family, at static init.
template <class Args, class Describe, class MakeSchema, class MakeFactory>
bool register_variants(const Variants<Args>& variants, const std::vector<PretrainedCfg>& cfgs, Describe describe,
                       MakeSchema schema, MakeFactory factory) {
  for (const auto& [name, args] : variants) {
    const PretrainedCfg& weights = default_cfg(cfgs, name);
    Registry<Classifier>::instance().add(name, describe(args, weights), schema(args, weights), factory(args, weights));
  }
  return true;
}

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
