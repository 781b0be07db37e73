// The EfficientNet and MobileNetV3 families, as timm's efficientnet.py and mobilenetv3.py over
// _efficientnet_builder.py and _efficientnet_blocks.py: an architecture is timm's list of block
// strings ("ir_r2_k3_s2_e6_c24_se0.25" = InvertedResidual, 2 repeats, 3x3 depthwise, stride 2,
// expansion 6, 24 channels, squeeze-excite 0.25), decoded and built by one builder
// (efficientnet_builder.cpp, over the blocks of efficientnet_blocks.cpp); the two families differ
// in their SE flavour and their head only. This file: the trunk, the two heads, the variants.
//
//   efficientnet_b0..b3   = timm's _gen_efficientnet(channel_multiplier, depth_multiplier): SiLU,
//                           SE with a sigmoid gate, conv_head + bn2 before the pooling
//   mobilenetv3_large_100 = timm's _gen_mobilenet_v3: ReLU / hard-swish per block, SE with a
//                           hard-sigmoid gate, pooling before a biased conv_head (no BN)
//
// Module names, registration and construction order are timm's, so the state_dict keys are
// (conv_stem, bn1, blocks.S.B.{conv_dw, bn1, se.conv_reduce, se.conv_expand, conv_pw, bn2} for
// DepthwiseSeparableConv, {conv_pw, bn1, conv_dw, bn2, se.*, conv_pwl, bn3} for InvertedResidual,
// {conv, bn1} for ConvBnAct, conv_head, bn2, classifier) and a seeded model starts from the very
// weights `torch.manual_seed(s); timm.create_model(NAME)` draws (_init_weight_goog).
#include "components/models/efficientnet_builder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace trainrun {
namespace effnet {
namespace {

// What EfficientNet and MobileNetV3 share: stem, blocks, timm's init, checkpointing, the
// pretrained config. The heads are built by the subclasses, after the blocks, as timm does.
class Trunk : public Classifier {
 public:
  InputConfig input_config() const override { return arch_.input; }
  std::string classifier_pattern() const override { return "classifier.*"; }
  std::string published_weights() const override { return arch_.published; }
  // oneDNN's NHWC depthwise convolutions: a training step of efficientnet_b0 (batch 8, 224, 2
  // threads, LibTorch 1.13's kernels through python3-torch) took 28-46 s channels_last against
  // 54-74 s contiguous, four interleaved runs each on the shared 2-core machine.
  bool prefers_channels_last() const override { return true; }

  // timm's set_grad_checkpointing: checkpoint_seq(self.blocks, x, flatten=True) recomputes each
  // block on its own; the stem and the head are never checkpointed.
  std::vector<std::string> checkpoint_stages() const override {
    std::vector<std::string> names;
    for (std::size_t s = 0; s < stages_.size(); ++s) names.push_back("blocks." + std::to_string(s));
    return names;
  }
  void set_activation_checkpointing(const std::vector<std::string>& stages, CheckpointBlock checkpoint) override {
    for (std::size_t s = 0; s < stages_.size(); ++s)
      checkpointed_[s] = std::find(stages.begin(), stages.end(), "blocks." + std::to_string(s)) != stages.end();
    checkpoint_ = std::move(checkpoint);
  }

 protected:
  explicit Trunk(const Options& o) : arch_(o.arch), drop_rate_(o.drop_rate) {
    int64_t stem = o.arch.fix_stem ? o.arch.stem_size : round_channels(o.arch.stem_size, o.arch.channel_multiplier);
    conv_stem_ = register_module("conv_stem", conv(3, stem, 3, 2));
    bn1_ = register_module("bn1", nn::BatchNorm2d(stem));
    // timm's EfficientNetBuilder probes its SE layer with se_layer(8, rd_ratio=1.0) before
    // building; the probe's two 1x1 convs draw their default init from the RNG.
    SqueezeExcite(8, 1.0, o.arch.act, o.arch.se);
    auto blocks = register_module("blocks", nn::ModuleList());
    head_chs_ = stem;
    stages_ = build_blocks(o, head_chs_);
    for (const auto& stage : stages_) {
      nn::ModuleList list;
      for (const auto& block : stage) list->push_back(block);
      blocks->push_back(list);
    }
    checkpointed_.assign(stages_.size(), false);
  }

  at::Tensor forward_features(const at::Tensor& input) {
    at::Tensor x = activate(bn1_(conv_stem_(input)), arch_.act);
    for (std::size_t s = 0; s < stages_.size(); ++s)
      for (const auto& block : stages_[s])
        x = checkpointed_[s] && at::GradMode::is_enabled()
                ? checkpoint_(block, [block](const at::Tensor& in) { return block->forward(in); }, x)
                : block->forward(x);
    return x;
  }
  at::Tensor dropout(const at::Tensor& x) { return drop_rate_ > 0 ? torch::dropout(x, drop_rate_, is_training()) : x; }

  // timm's efficientnet_init_weights (_init_weight_goog) over the modules in timm's order:
  // convs normal(0, sqrt(2 / fan_out)) with fan_out = k*k*out / groups, BN 1/0, the classifier
  // uniform(+-1/sqrt(out_features)), biases 0.
  void init_weights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        const auto& k = c->options.kernel_size();
        double fan_out = double((*k)[0] * (*k)[1] * c->options.out_channels() / c->options.groups());
        c->weight.normal_(0, std::sqrt(2.0 / fan_out));
        if (c->bias.defined()) c->bias.zero_();
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        bn->weight.fill_(1);
        bn->bias.zero_();
      } else if (auto* fc = m->as<nn::Linear>()) {
        double range = 1.0 / std::sqrt(double(fc->weight.size(0)));
        fc->weight.uniform_(-range, range);
        fc->bias.zero_();
      }
    }
  }

  ArchConfig arch_;
  int64_t head_chs_ = 0;  // the last block's output channels

 private:
  nn::Conv2d conv_stem_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<std::vector<std::shared_ptr<Block>>> stages_;
  std::vector<bool> checkpointed_;
  CheckpointBlock checkpoint_;
  double drop_rate_;
};

// timm's EfficientNet head: conv_head -> bn2 + act -> global average pool -> dropout -> classifier.
class EfficientNetImpl : public Trunk {
 public:
  explicit EfficientNetImpl(const Options& o) : Trunk(o) {
    conv_head_ = register_module("conv_head", conv(head_chs_, o.arch.num_features, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(o.arch.num_features));
    classifier_ = register_module("classifier", nn::Linear(o.arch.num_features, o.num_classes));
    init_weights();
  }
  at::Tensor forward(const at::Tensor& input) override {
    at::Tensor x = activate(bn2_(conv_head_(forward_features(input))), arch_.act);
    return classifier_(dropout(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1)));
  }
  // timm's EfficientNet.group_matcher: conv_head|bn2 sits in the blocks group with the suffix
  // (99999,) (MATCH_PREV_GROUP): the layer of the last block.
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^conv_stem|bn1)"}, {"blocks", R"(^blocks\.(\d+)\.(\d+))"}, {"blocks", R"(conv_head|bn2)", {99999}}};
  }

 private:
  nn::Conv2d conv_head_{nullptr};
  nn::BatchNorm2d bn2_{nullptr};
  nn::Linear classifier_{nullptr};
};

// timm's MobileNetV3 "efficient head": global average pool -> conv_head (biased, no BN) + act ->
// flatten -> dropout -> classifier.
class MobileNetV3Impl : public Trunk {
 public:
  explicit MobileNetV3Impl(const Options& o) : Trunk(o) {
    conv_head_ = register_module("conv_head", conv(head_chs_, o.arch.num_features, 1, 1, 1, /*bias=*/true));
    classifier_ = register_module("classifier", nn::Linear(o.arch.num_features, o.num_classes));
    init_weights();
  }
  at::Tensor forward(const at::Tensor& input) override {
    at::Tensor x = torch::adaptive_avg_pool2d(forward_features(input), {1, 1});
    return classifier_(dropout(activate(conv_head_(x), arch_.act).flatten(1)));
  }
  // timm's MobileNetV3.group_matcher: conv_head and the classifier match nothing (the last id).
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^conv_stem|bn1)"}, {"blocks", R"(^blocks\.(\d+)\.(\d+))"}};
  }

 private:
  nn::Conv2d conv_head_{nullptr};
  nn::Linear classifier_{nullptr};
};

InputConfig imagenet_input(int64_t size, double crop_pct, bool inception_mean = false) {
  InputConfig in;
  in.mean = inception_mean ? std::vector<double>{0.5, 0.5, 0.5} : std::vector<double>{0.485, 0.456, 0.406};
  in.std = inception_mean ? std::vector<double>{0.5, 0.5, 0.5} : std::vector<double>{0.229, 0.224, 0.225};
  in.input_size = {3, size, size};
  in.interpolation = "bicubic";
  in.crop_pct = crop_pct;
  return in;
}

// timm's _gen_efficientnet: EfficientNet-B0's stages under a width and a depth multiplier.
ArchConfig efficientnet(double width, double depth, const std::string& tag, InputConfig input) {
  ArchConfig c;
  c.arch_def = {{"ds_r1_k3_s1_e1_c16_se0.25"}, {"ir_r2_k3_s2_e6_c24_se0.25"}, {"ir_r2_k5_s2_e6_c40_se0.25"},
                {"ir_r3_k3_s2_e6_c80_se0.25"}, {"ir_r3_k5_s1_e6_c112_se0.25"}, {"ir_r4_k5_s2_e6_c192_se0.25"},
                {"ir_r1_k3_s1_e6_c320_se0.25"}};
  c.channel_multiplier = width;
  c.depth_multiplier = depth;
  c.num_features = round_channels(1280, width);
  c.act = Act::SiLU;
  c.published = "hf-hub:timm/" + tag;
  c.input = std::move(input);
  return c;
}

// timm's _gen_mobilenet_v3 for the large, non-minimal variant at width 1.0.
ArchConfig mobilenetv3_large_100() {
  ArchConfig c;
  c.head = Head::MobileNetV3;
  c.arch_def = {{"ds_r1_k3_s1_e1_c16_nre"},
                {"ir_r1_k3_s2_e4_c24_nre", "ir_r1_k3_s1_e3_c24_nre"},
                {"ir_r3_k5_s2_e3_c40_se0.25_nre"},
                {"ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"},
                {"ir_r2_k3_s1_e6_c112_se0.25"},
                {"ir_r3_k5_s2_e6_c160_se0.25"},
                {"cn_r1_k1_s1_c960"}};
  c.stem_size = 16;
  c.num_features = 1280;
  c.act = Act::HardSwish;
  c.se = SEStyle{Gate::HardSigmoid, Act::ReLU, /*from_exp=*/true, /*round_to_divisor=*/true};
  c.published = "hf-hub:timm/mobilenetv3_large_100.ra_in1k";
  c.input = imagenet_input(224, 0.875);
  return c;
}

Schema schema() {
  Schema schema;
  add_timm_head_keys(schema, "timm");
  return add_timm_drop_keys(schema, "dropout before the classifier (timm's drop_rate; its B0/B1 recipes use 0.2)",
                            "stochastic depth of the residual blocks, drop_path_rate * block_index / block_count "
                            "(timm's builder; its EfficientNet recipes use 0.2)");
}

Kind<Classifier>::Factory factory(const ArchConfig& arch) {
  return [arch](const Config& c) -> std::shared_ptr<Classifier> {
    Options o;
    o.arch = arch;
    read_timm_keys(c, o);
    if (arch.head == Head::MobileNetV3) return std::make_shared<MobileNetV3Impl>(o);
    return std::make_shared<EfficientNetImpl>(o);
  };
}

// The default pretrained tag of each name in timm's default_cfgs, with its pretrained_cfg.
const ArchConfig kB0 = efficientnet(1.0, 1.0, "efficientnet_b0.ra_in1k", imagenet_input(224, 0.875));
const ArchConfig kB1 = efficientnet(1.0, 1.1, "efficientnet_b1.ra4_e3600_r240_in1k", imagenet_input(240, 0.9, true));
const ArchConfig kB2 = efficientnet(1.1, 1.2, "efficientnet_b2.ra_in1k", imagenet_input(256, 0.875));
const ArchConfig kB3 = efficientnet(1.2, 1.4, "efficientnet_b3.ra2_in1k", imagenet_input(288, 0.875));

}  // namespace
}  // namespace effnet

TRAINRUN_REGISTER(Classifier, "efficientnet_b0",
                  "timm's EfficientNet-B0: MBConv stages with SE, SiLU, width 1.0 depth 1.0 (ImageNet mean/std, 224x224)",
                  effnet::schema(), effnet::factory(effnet::kB0));
TRAINRUN_REGISTER(Classifier, "efficientnet_b1",
                  "timm's EfficientNet-B1: width 1.0 depth 1.1 (mean/std 0.5, 240x240, crop 0.9)",
                  effnet::schema(), effnet::factory(effnet::kB1));
TRAINRUN_REGISTER(Classifier, "efficientnet_b2",
                  "timm's EfficientNet-B2: width 1.1 depth 1.2 (ImageNet mean/std, 256x256)",
                  effnet::schema(), effnet::factory(effnet::kB2));
TRAINRUN_REGISTER(Classifier, "efficientnet_b3",
                  "timm's EfficientNet-B3: width 1.2 depth 1.4 (ImageNet mean/std, 288x288)",
                  effnet::schema(), effnet::factory(effnet::kB3));
TRAINRUN_REGISTER(Classifier, "mobilenetv3_large_100",
                  "timm's MobileNetV3-Large 1.0: ReLU/hard-swish, hard-sigmoid SE, pooled conv_head (ImageNet mean/std, 224x224)",
                  effnet::schema(), effnet::factory(effnet::mobilenetv3_large_100()));

}  // namespace trainrun
