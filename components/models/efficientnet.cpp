// The EfficientNet and MobileNetV3 families, as timm's efficientnet.py and mobilenetv3.py over
// _efficientnet_builder.py and _efficientnet_blocks.py: an architecture is timm's list of block
// strings ("ir_r2_k3_s2_e6_c24_se0.25" = InvertedResidual, 2 repeats, 3x3 depthwise, stride 2,
// expansion 6, 24 channels, squeeze-excite 0.25), decoded and built by one builder
// (efficientnet_builder.cpp, over the blocks of efficientnet_blocks.cpp); the two families differ
// in their SE flavour and their head only. This file: the trunk, the two heads, the variants as
// data (kVariants: EfficientNet-B0's stages under a width and a depth multiplier; MobileNetV3's own)
// and their published weights' settings apart (kCfgs, timm's default_cfgs).
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

#include <fmt/format.h>

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
  InputConfig input_config() const override { return trainrun::input_config(weights_); }
  std::string classifier_pattern() const override { return "classifier.*"; }
  std::string published_weights() const override { return hub_id(weights_); }
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
  explicit Trunk(const Options& o) : arch_(o.arch), weights_(o.weights), drop_rate_(o.drop_rate) {
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
    if (weight_init_skipped()) return;
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

  EfficientNetArgs arch_;
  int64_t head_chs_ = 0;  // the last block's output channels

 private:
  PretrainedCfg weights_;
  nn::Conv2d conv_stem_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<std::vector<std::shared_ptr<Block>>> stages_;
  std::vector<bool> checkpointed_;
  CheckpointBlock checkpoint_;
  double drop_rate_;
};

// timm's EfficientNet head: conv_head -> bn2 + act -> global average pool -> dropout -> classifier.
// Its width scales with the trunk's (timm's round_chs_fn(1280)).
class EfficientNetImpl : public Trunk {
 public:
  explicit EfficientNetImpl(const Options& o) : Trunk(o) {
    const int64_t features = round_channels(o.arch.num_features, o.arch.channel_multiplier);
    conv_head_ = register_module("conv_head", conv(head_chs_, features, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(features));
    classifier_ = register_module("classifier", nn::Linear(features, o.num_classes));
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

const std::vector<std::vector<std::string>> kEfficientNetB0Stages = {
    {"ds_r1_k3_s1_e1_c16_se0.25"}, {"ir_r2_k3_s2_e6_c24_se0.25"},  {"ir_r2_k5_s2_e6_c40_se0.25"},
    {"ir_r3_k3_s2_e6_c80_se0.25"}, {"ir_r3_k5_s1_e6_c112_se0.25"}, {"ir_r4_k5_s2_e6_c192_se0.25"},
    {"ir_r1_k3_s1_e6_c320_se0.25"}};

// timm's _gen_efficientnet and _gen_mobilenet_v3 (large, not minimal, width 1.0): each name's
// arguments.
const Variants<EfficientNetArgs> kVariants = {
    {"efficientnet_b0", {.arch_def = kEfficientNetB0Stages}},
    {"efficientnet_b1", {.arch_def = kEfficientNetB0Stages, .depth_multiplier = 1.1}},
    {"efficientnet_b2", {.arch_def = kEfficientNetB0Stages, .channel_multiplier = 1.1, .depth_multiplier = 1.2}},
    {"efficientnet_b3", {.arch_def = kEfficientNetB0Stages, .channel_multiplier = 1.2, .depth_multiplier = 1.4}},
    {"mobilenetv3_large_100",
     {.head = Head::MobileNetV3,
      .arch_def = {{"ds_r1_k3_s1_e1_c16_nre"},
                   {"ir_r1_k3_s2_e4_c24_nre", "ir_r1_k3_s1_e3_c24_nre"},
                   {"ir_r3_k5_s2_e3_c40_se0.25_nre"},
                   {"ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"},
                   {"ir_r2_k3_s1_e6_c112_se0.25"},
                   {"ir_r3_k5_s2_e6_c160_se0.25"},
                   {"cn_r1_k1_s1_c960"}},
      .stem_size = 16,
      .act = Act::HardSwish,
      .se = {.gate = Gate::HardSigmoid, .force_act = Act::ReLU, .from_exp = true, .round_to_divisor = true}}},
};

// timm's default_cfgs, the default tag of each name (bicubic, ImageNet mean/std but for B1's).
const std::vector<PretrainedCfg> kCfgs = {
    {.tag = "efficientnet_b0.ra_in1k"},
    {.tag = "efficientnet_b1.ra4_e3600_r240_in1k", .input_size = 240, .crop_pct = 0.9, .mean_std = MeanStd::Inception},
    {.tag = "efficientnet_b2.ra_in1k", .input_size = 256},
    {.tag = "efficientnet_b3.ra2_in1k", .input_size = 288},
    {.tag = "mobilenetv3_large_100.ra_in1k"},
};

const char* act_name(Act act) { return act == Act::SiLU ? "SiLU" : act == Act::HardSwish ? "hard-swish" : "ReLU"; }

// "timm's MobileNetV3: MBConv stages with hard-sigmoid SE, ReLU/hard-swish, pooled conv_head, width
// 1.0 depth 1.0 (...)": the activations are the model's and those its block strings name (n<re>).
std::string describe(const EfficientNetArgs& a, const PretrainedCfg& weights) {
  const bool mobilenet = a.head == Head::MobileNetV3;
  std::string acts = act_name(a.act);
  for (const auto& stage : a.arch_def)
    for (const auto& block : stage)
      if (block.find("_nre") != std::string::npos && acts.find("ReLU") == std::string::npos) acts = "ReLU/" + acts;
  return fmt::format("timm's {}: MBConv stages with {}SE, {}{}, width {:.1f} depth {:.1f} ({})",
                     mobilenet ? "MobileNetV3" : "EfficientNet", a.se.gate == Gate::HardSigmoid ? "hard-sigmoid " : "",
                     acts, mobilenet ? ", pooled conv_head" : "", a.channel_multiplier, a.depth_multiplier,
                     describe_input(weights));
}

Schema schema(const EfficientNetArgs& /*arch*/, const PretrainedCfg& /*weights*/) {
  Schema schema;
  add_timm_head_keys(schema, "timm");
  return add_timm_drop_keys(schema, "dropout before the classifier (timm's drop_rate; its B0/B1 recipes use 0.2)",
                            "stochastic depth of the residual blocks, drop_path_rate * block_index / block_count "
                            "(timm's builder; its EfficientNet recipes use 0.2)");
}

Kind<Classifier>::Factory factory(const EfficientNetArgs& arch, const PretrainedCfg& weights) {
  return [arch, weights](const Config& c) -> std::shared_ptr<Classifier> {
    Options o;
    o.arch = arch;
    o.weights = weights;
    read_timm_keys(c, o);
    if (arch.head == Head::MobileNetV3) return std::make_shared<MobileNetV3Impl>(o);
    return std::make_shared<EfficientNetImpl>(o);
  };
}

[[maybe_unused]] const bool kRegistered = register_variants(kVariants, kCfgs, describe, schema, factory);

}  // namespace
}  // namespace effnet

}  // namespace trainrun
