// The EfficientNet and MobileNetV3 families, as timm's efficientnet.py and mobilenetv3.py over
// _efficientnet_builder.py and _efficientnet_blocks.py: an architecture is timm's list of block
// strings ("ir_r2_k3_s2_e6_c24_se0.25" = InvertedResidual, 2 repeats, 3x3 depthwise, stride 2,
// expansion 6, 24 channels, squeeze-excite 0.25), decoded and built by one builder; the two
// families differ in their SE flavour and their head only.
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
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace trainrun {
namespace {
namespace effnet {

namespace nn = torch::nn;

enum class Act { ReLU, SiLU, HardSwish };
enum class Gate { Sigmoid, HardSigmoid };
enum class Head { EfficientNet, MobileNetV3 };

// timm's activation modules are built inplace=True; the in-place ops give the same values.
at::Tensor activate(at::Tensor x, Act act) {
  switch (act) {
    case Act::ReLU: return x.relu_();
    case Act::SiLU: return torch::silu_(x);
    case Act::HardSwish: return torch::hardswish_(x);
  }
  return x;
}

// timm.layers.make_divisible: round to the nearest multiple of `divisor`, never more than 10 % down.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t rounded = std::max(divisor, int64_t(v + double(divisor) / 2) / divisor * divisor);
  return double(rounded) < 0.9 * v ? rounded + divisor : rounded;
}

// timm's round_channels: a channel count under the width multiplier.
int64_t round_channels(int64_t channels, double multiplier) {
  return multiplier == 0.0 ? channels : make_divisible(double(channels) * multiplier);
}

// Python's round(): halves to even, as std::nearbyint does in the default rounding mode.
int64_t python_round(double v) { return int64_t(std::nearbyint(v)); }

// timm's create_conv2d with pad_type '': symmetric padding ((stride - 1) + (k - 1)) // 2, no bias.
nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1, bool bias = false) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(((stride - 1) + (kernel - 1)) / 2)
                        .groups(groups)
                        .bias(bias));
}

// One block string, as timm's _decode_block_str reads it (the options these models use).
struct BlockDef {
  std::string type;  // ds = DepthwiseSeparableConv, ir = InvertedResidual, cn = ConvBnAct
  int64_t repeat = 1, kernel = 3, stride = 1, out_chs = 0;
  double exp_ratio = 1.0, se_ratio = 0.0;
  bool noskip = false, skip = false;
  std::optional<Act> act;  // n<re|hs|sw>: the block's own activation, else the model's
};

BlockDef decode_block(const std::string& text) {
  std::istringstream in(text);
  BlockDef d;
  std::getline(in, d.type, '_');
  if (d.type != "ds" && d.type != "ir" && d.type != "cn") throw std::invalid_argument("block type " + d.type + " in " + text);
  for (std::string op; std::getline(in, op, '_');) {
    if (op == "noskip" || op == "skip") {
      (op == "skip" ? d.skip : d.noskip) = true;
    } else if (op == "nre" || op == "nhs" || op == "nsw") {
      d.act = op == "nre" ? Act::ReLU : op == "nhs" ? Act::HardSwish : Act::SiLU;
    } else {
      std::size_t digit = op.find_first_of("0123456789");
      std::string key = op.substr(0, digit);
      double value = digit == std::string::npos ? 0.0 : std::stod(op.substr(digit));
      if (key == "r") d.repeat = int64_t(value);
      else if (key == "k") d.kernel = int64_t(value);
      else if (key == "s") d.stride = int64_t(value);
      else if (key == "e") d.exp_ratio = value;
      else if (key == "c") d.out_chs = int64_t(value);
      else if (key == "se") d.se_ratio = value;
      else throw std::invalid_argument("block option " + op + " in " + text);
    }
  }
  if (d.type == "ds") d.exp_ratio = 1.0;  // timm's ds block args carry no exp_ratio
  return d;
}

// timm's decode_arch_def + _scale_stage_depth (depth_trunc 'ceil'): each stage's repeats scaled by
// the depth multiplier, the extra repeats handed out from the stage's last block string backwards.
std::vector<std::vector<BlockDef>> decode_arch_def(const std::vector<std::vector<std::string>>& arch, double depth_multiplier) {
  std::vector<std::vector<BlockDef>> stages;
  for (const auto& strings : arch) {
    std::vector<BlockDef> defs;
    int64_t repeats = 0;
    for (const auto& s : strings) {
      defs.push_back(decode_block(s));
      repeats += defs.back().repeat;
    }
    int64_t scaled = int64_t(std::ceil(double(repeats) * depth_multiplier));
    std::vector<int64_t> counts(defs.size());
    for (std::size_t i = defs.size(); i-- > 0;) {
      int64_t r = defs[i].repeat;
      counts[i] = std::max<int64_t>(1, python_round(double(r) / double(repeats) * double(scaled)));
      repeats -= r;
      scaled -= counts[i];
    }
    std::vector<BlockDef> stage;
    for (std::size_t i = 0; i < defs.size(); ++i) stage.insert(stage.end(), std::size_t(counts[i]), defs[i]);
    stages.push_back(stage);
  }
  return stages;
}

// A model's squeeze-excite flavour (timm's se_layer partial and the builder's se_from_exp).
struct SEStyle {
  Gate gate = Gate::Sigmoid;
  std::optional<Act> force_act;   // MobileNetV3: ReLU inside the SE whatever the block's activation
  bool from_exp = false;          // ratio of the expanded channels (MobileNetV3) or of the block input
  bool round_to_divisor = false;  // rd channels by round_channels (MobileNetV3) or Python's round
};

// One built block's arguments, as timm's EfficientNetBuilder._make_block hands them over.
struct BlockOptions {
  int64_t in_chs = 0, out_chs = 0, kernel = 3, stride = 1;
  double exp_ratio = 1.0;
  Act act = Act::ReLU;
  bool has_skip = false;
  double se_ratio = 0.0;  // of the SE's input channels; 0 = no SE
  SEStyle se;
  double drop_path = 0.0;
};

class SqueezeExciteImpl : public nn::Module {
 public:
  SqueezeExciteImpl(int64_t chs, double ratio, Act block_act, const SEStyle& style)
      : act_(style.force_act.value_or(block_act)), gate_(style.gate) {
    double rd = double(chs) * ratio;
    int64_t rd_chs = style.round_to_divisor ? make_divisible(rd) : python_round(rd);
    conv_reduce_ = register_module("conv_reduce", conv(chs, rd_chs, 1, 1, 1, /*bias=*/true));
    conv_expand_ = register_module("conv_expand", conv(rd_chs, chs, 1, 1, 1, /*bias=*/true));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor s = activate(conv_reduce_(x.mean({2, 3}, /*keepdim=*/true)), act_);
    s = conv_expand_(s);
    return x * (gate_ == Gate::Sigmoid ? s.sigmoid() : torch::hardsigmoid(s));
  }

 private:
  Act act_;
  Gate gate_;
  nn::Conv2d conv_reduce_{nullptr}, conv_expand_{nullptr};
};
TORCH_MODULE(SqueezeExcite);

class Block : public nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;

 protected:
  explicit Block(const BlockOptions& o) : act_(o.act), has_skip_(o.has_skip), drop_path_(o.drop_path) {}
  // The SE, registered where timm's block registers `se` (nothing when the block has none).
  void add_se(int64_t chs, const BlockOptions& o) {
    if (o.se_ratio > 0) se_ = register_module("se", SqueezeExcite(chs, o.se_ratio, o.act, o.se));
  }
  at::Tensor se(const at::Tensor& x) { return se_ ? se_(x) : x; }
  at::Tensor finish(const at::Tensor& y, const at::Tensor& shortcut) {
    return has_skip_ ? drop_path(y, drop_path_, is_training()) + shortcut : y;
  }
  Act act_;

 private:
  bool has_skip_;
  double drop_path_;
  SqueezeExcite se_{nullptr};
};

// Depthwise conv -> BN + act -> SE -> pointwise conv -> BN (no act: timm's 'ds', not 'dsa').
class DepthwiseSeparableConvImpl : public Block {
 public:
  explicit DepthwiseSeparableConvImpl(const BlockOptions& o) : Block(o) {
    conv_dw_ = register_module("conv_dw", conv(o.in_chs, o.in_chs, o.kernel, o.stride, o.in_chs));
    bn1_ = register_module("bn1", nn::BatchNorm2d(o.in_chs));
    add_se(o.in_chs, o);
    conv_pw_ = register_module("conv_pw", conv(o.in_chs, o.out_chs, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(o.out_chs));
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = se(activate(bn1_(conv_dw_(x)), act_));
    return finish(bn2_(conv_pw_(y)), x);
  }

 private:
  nn::Conv2d conv_dw_{nullptr}, conv_pw_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
};
TORCH_MODULE(DepthwiseSeparableConv);

// MBConv: pointwise expansion -> depthwise conv -> SE -> pointwise linear projection.
class InvertedResidualImpl : public Block {
 public:
  explicit InvertedResidualImpl(const BlockOptions& o) : Block(o) {
    int64_t mid = make_divisible(double(o.in_chs) * o.exp_ratio);
    conv_pw_ = register_module("conv_pw", conv(o.in_chs, mid, 1));
    bn1_ = register_module("bn1", nn::BatchNorm2d(mid));
    conv_dw_ = register_module("conv_dw", conv(mid, mid, o.kernel, o.stride, mid));
    bn2_ = register_module("bn2", nn::BatchNorm2d(mid));
    add_se(mid, o);
    conv_pwl_ = register_module("conv_pwl", conv(mid, o.out_chs, 1));
    bn3_ = register_module("bn3", nn::BatchNorm2d(o.out_chs));
  }
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = activate(bn1_(conv_pw_(x)), act_);
    y = se(activate(bn2_(conv_dw_(y)), act_));
    return finish(bn3_(conv_pwl_(y)), x);
  }

 private:
  nn::Conv2d conv_pw_{nullptr}, conv_dw_{nullptr}, conv_pwl_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
};
TORCH_MODULE(InvertedResidual);

// Conv -> BN + act (MobileNetV3's last stage, 1x1 to 960 channels).
class ConvBnActImpl : public Block {
 public:
  explicit ConvBnActImpl(const BlockOptions& o) : Block(o) {
    conv_ = register_module("conv", conv(o.in_chs, o.out_chs, o.kernel, o.stride));
    bn1_ = register_module("bn1", nn::BatchNorm2d(o.out_chs));
  }
  at::Tensor forward(const at::Tensor& x) override { return finish(activate(bn1_(conv_(x)), act_), x); }

 private:
  nn::Conv2d conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
};
TORCH_MODULE(ConvBnAct);

// The architecture, as the arguments of timm's _gen_efficientnet / _gen_mobilenet_v3.
struct ArchConfig {
  Head head = Head::EfficientNet;
  std::vector<std::vector<std::string>> arch_def;
  double channel_multiplier = 1.0, depth_multiplier = 1.0;
  int64_t stem_size = 32;
  bool fix_stem = false;        // stem channels not scaled by the width multiplier
  int64_t num_features = 1280;  // conv_head's output channels (EfficientNet: width-scaled)
  Act act = Act::SiLU;          // the model's default activation
  SEStyle se;
  std::string published;        // model.pretrained: true (timm's default tag on the Hub)
  InputConfig input;            // that tag's pretrained_cfg
};

struct Options : TimmKeys {
  ArchConfig arch;
};

// timm's EfficientNetBuilder.__call__ + _make_block: stage by stage, only a stage's first block
// strides; stochastic depth drop_path_rate * block_idx / block_count over all blocks. `in_chs`
// goes from the stem's channels to the last block's (timm's builder.in_chs).
std::vector<std::vector<std::shared_ptr<Block>>> build_blocks(const Options& o, int64_t& in_chs) {
  const ArchConfig& a = o.arch;
  auto stages = decode_arch_def(a.arch_def, a.depth_multiplier);
  int64_t count = 0, index = 0;
  for (const auto& s : stages) count += int64_t(s.size());
  std::vector<std::vector<std::shared_ptr<Block>>> built;
  for (const auto& stage : stages) {
    std::vector<std::shared_ptr<Block>> blocks;
    for (std::size_t b = 0; b < stage.size(); ++b, ++index) {
      const BlockDef& d = stage[b];
      BlockOptions bo;
      bo.in_chs = in_chs;
      bo.out_chs = round_channels(d.out_chs, a.channel_multiplier);
      bo.kernel = d.kernel;
      bo.stride = b == 0 ? d.stride : 1;
      bo.exp_ratio = d.exp_ratio;
      bo.act = d.act.value_or(a.act);
      bool same_shape = bo.stride == 1 && bo.in_chs == bo.out_chs;
      bo.has_skip = d.type == "cn" ? d.skip && same_shape : same_shape && !d.noskip;
      bo.se_ratio = a.se.from_exp ? d.se_ratio : d.se_ratio / d.exp_ratio;
      bo.se = a.se;
      bo.drop_path = o.drop_path_rate * double(index) / double(count);
      if (d.type == "ds") blocks.push_back(DepthwiseSeparableConv(bo).ptr());
      else if (d.type == "ir") blocks.push_back(InvertedResidual(bo).ptr());
      else blocks.push_back(ConvBnAct(bo).ptr());
      in_chs = bo.out_chs;
    }
    built.push_back(blocks);
  }
  return built;
}

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

}  // namespace effnet
}  // namespace

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
