// ConvNeXt (Liu et al., "A ConvNet for the 2020s", arXiv:2201.03545), as timm's
// timm/models/convnext.py: one ConvNeXt class, variants as data (kConvNeXts, each name's depths and
// dims) and their published weights' settings apart (kConvNeXtCfgs, timm's default_cfgs).
//
// timm's defaults for these: patch stem (4x4 conv stride 4, LayerNorm2d), conv_mlp=False (the
// block's LayerNorm and Mlp run channels-last: permute, LayerNorm over C, Linear, GELU, Linear,
// permute back), layer scale `gamma` at 1e-6, pool -> LayerNorm2d -> fc head
// (NormMlpClassifierHead). Module names and construction order are timm's, so the state_dict keys
// are (stem.0/1.*, stages.S.downsample.0/1.* for S > 0, stages.S.blocks.B.{gamma, conv_dw.*,
// norm.*, mlp.fc1.*, mlp.fc2.*}, head.norm.*, head.fc.*) and a seeded model draws timm's init.
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace trainrun {
namespace {

namespace nn = torch::nn;

constexpr double kConvNeXtNormEps = 1e-6;  // timm's LayerNorm / LayerNorm2d default

// The architecture, as the model_args of timm's @register_model functions.
struct ConvNeXtArgs {
  std::array<int64_t, 4> depths{3, 3, 9, 3};
  std::array<int64_t, 4> dims{96, 192, 384, 768};
};

struct ConvNeXtOptions : TimmKeys {  // drop_path_rate: linear over all blocks (timm's calculate_drop_path_rates)
  ConvNeXtArgs arch;
  PretrainedCfg weights;
  double head_init_scale = 1.0;  // head.fc's weight and bias scaled after init
};

// F.layer_norm over the last dim. Under CPU bf16 autocast the convs and linears hand it bf16
// activations while its weight stays fp32: LibTorch 1.13 refuses the mix ("expected scalar type
// BFloat16 but found Float"; timm fails the same way on torch 1.13) where 2.x normalises in fp32
// and returns bf16. Doing that here gives both versions 2.x's result; the next op casts to bf16
// either way.
at::Tensor convnext_layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (x.scalar_type() == weight.scalar_type())
    return torch::layer_norm(x, {weight.size(0)}, weight, bias, kConvNeXtNormEps);
  return torch::layer_norm(x.to(weight.scalar_type()), {weight.size(0)}, weight, bias, kConvNeXtNormEps)
      .to(x.scalar_type());
}

// timm.layers.LayerNorm2d: LayerNorm over the channels of an NCHW tensor (permute, normalise the
// last dim, permute back), so its parameters are a plain LayerNorm's `weight`, `bias`.
class ConvNeXtLayerNorm2dImpl : public nn::Module {
 public:
  explicit ConvNeXtLayerNorm2dImpl(int64_t channels)
      : weight(register_parameter("weight", torch::ones({channels}))),
        bias(register_parameter("bias", torch::zeros({channels}))) {}
  at::Tensor forward(const at::Tensor& x) {
    return convnext_layer_norm(x.permute({0, 2, 3, 1}), weight, bias).permute({0, 3, 1, 2});
  }
  at::Tensor weight, bias;
};
TORCH_MODULE(ConvNeXtLayerNorm2d);

// timm.layers.Mlp (use_conv=False, no hidden norm, dropout 0): fc1, GELU (erf), fc2.
class ConvNeXtMlpImpl : public nn::Module {
 public:
  ConvNeXtMlpImpl(int64_t dim, int64_t hidden)
      : fc1(register_module("fc1", nn::Linear(dim, hidden))), fc2(register_module("fc2", nn::Linear(hidden, dim))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2(torch::gelu(fc1(x))); }

 private:
  nn::Linear fc1, fc2;
};
TORCH_MODULE(ConvNeXtMlp);

// timm's ConvNeXtBlock with conv_mlp=False: x + drop_path(gamma * Mlp(LN(dwconv7x7(x)))), the
// LayerNorm and the Mlp channels-last.
class ConvNeXtBlockImpl : public nn::Module {
 public:
  ConvNeXtBlockImpl(int64_t dim, double drop_path_prob, double ls_init_value)
      : conv_dw(register_module("conv_dw", nn::Conv2d(nn::Conv2dOptions(dim, dim, 7).padding(3).groups(dim)))),
        norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({dim}).eps(kConvNeXtNormEps)))),  // timm.layers.LayerNorm
        mlp(register_module("mlp", ConvNeXtMlp(dim, 4 * dim))),
        gamma(register_parameter("gamma", torch::full({dim}, ls_init_value))),
        drop_prob(drop_path_prob) {}

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = conv_dw(x).permute({0, 2, 3, 1});
    y = mlp(convnext_layer_norm(y, norm->weight, norm->bias)).permute({0, 3, 1, 2});
    y = y.mul(gamma.reshape({1, -1, 1, 1}));
    return drop_path(y, drop_prob, is_training()) + x;
  }

 private:
  nn::Conv2d conv_dw;
  nn::LayerNorm norm;
  ConvNeXtMlp mlp;
  at::Tensor gamma;
  double drop_prob;
};
TORCH_MODULE(ConvNeXtBlock);

// timm's ConvNeXtStage: downsample (LayerNorm2d, 2x2 stride-2 conv) where the width changes, then
// the blocks.
class ConvNeXtStageImpl : public nn::Module {
 public:
  ConvNeXtStageImpl(int64_t in, int64_t out, const std::vector<double>& drop_path_rates, double ls_init_value) {
    if (in != out) {
      nn::Sequential down;
      down->push_back(ConvNeXtLayerNorm2d(in));
      down->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 2).stride(2)));
      downsample = register_module("downsample", down);
    }
    for (double rate : drop_path_rates) blocks->push_back(ConvNeXtBlock(out, rate, ls_init_value));
    register_module("blocks", blocks);
  }

  at::Tensor forward(at::Tensor x, const CheckpointBlock& checkpoint) {
    if (downsample) x = downsample->forward(x);
    if (!checkpoint || !at::GradMode::is_enabled()) return blocks->forward(x);
    for (const auto& item : *blocks) {  // timm's checkpoint_seq(self.blocks, x): one block at a time
      auto block = std::dynamic_pointer_cast<ConvNeXtBlockImpl>(item.ptr());
      x = checkpoint(block, [block](const at::Tensor& in) { return block->forward(in); }, x);
    }
    return x;
  }

 private:
  nn::Sequential downsample{nullptr};
  nn::Sequential blocks;
};
TORCH_MODULE(ConvNeXtStage);

// timm.layers.NormMlpClassifierHead without a hidden layer: average pool, LayerNorm2d, fc.
class ConvNeXtHeadImpl : public nn::Module {
 public:
  ConvNeXtHeadImpl(int64_t features, int64_t num_classes, double drop_rate)
      : norm(register_module("norm", ConvNeXtLayerNorm2d(features))),
        fc(register_module("fc", nn::Linear(features, num_classes))),
        drop_rate_(drop_rate) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = norm(x.mean({2, 3}, /*keepdim=*/true)).flatten(1);
    if (drop_rate_ > 0) y = torch::dropout(y, drop_rate_, is_training());
    return fc(y);
  }
  ConvNeXtLayerNorm2d norm;
  nn::Linear fc;

 private:
  double drop_rate_;
};
TORCH_MODULE(ConvNeXtHead);

// timm's calculate_drop_path_rates(rate, depths, stagewise=True): torch.linspace(0, rate, total)
// (float32) split by stage; still linear over the blocks, not constant per stage.
std::vector<std::vector<double>> convnext_drop_path_rates(double rate, const std::array<int64_t, 4>& depths) {
  int64_t total = 0;
  for (int64_t d : depths) total += d;
  at::Tensor all = torch::linspace(0.0, rate, total, torch::kFloat);
  std::vector<std::vector<double>> out;
  int64_t at = 0;
  for (int64_t d : depths) {
    std::vector<double> stage;
    for (int64_t i = 0; i < d; ++i) stage.push_back(all[at + i].item<float>());
    out.push_back(stage);
    at += d;
  }
  return out;
}

class ConvNeXtImpl : public Classifier {
 public:
  explicit ConvNeXtImpl(const ConvNeXtOptions& o) : weights_(o.weights) {
    const auto& dims = o.arch.dims;
    // One push_back per layer, in timm's order: each conv's default init draws from the RNG.
    nn::Sequential stem;
    stem->push_back(nn::Conv2d(nn::Conv2dOptions(3, dims[0], 4).stride(4)));
    stem->push_back(ConvNeXtLayerNorm2d(dims[0]));
    stem_ = register_module("stem", stem);
    auto rates = convnext_drop_path_rates(o.drop_path_rate, o.arch.depths);
    nn::ModuleList stages;
    int64_t prev = dims[0];
    for (std::size_t i = 0; i < 4; ++i) {
      stages_.push_back(ConvNeXtStage(prev, dims[i], rates[i], /*ls_init_value=*/1e-6));
      stages->push_back(stages_.back());
      prev = dims[i];
    }
    register_module("stages", stages);
    head_ = register_module("head", ConvNeXtHead(prev, o.num_classes, o.drop_rate));
    init_weights(o.head_init_scale);
  }

  at::Tensor forward(const at::Tensor& input) override {
    at::Tensor x = stem_->forward(input);
    for (std::size_t s = 0; s < stages_.size(); ++s)
      x = stages_[s]->forward(x, checkpointed_[s] ? checkpoint_ : CheckpointBlock());
    return head_(x);  // timm's norm_pre is Identity here (head_norm_first=False)
  }

  InputConfig input_config() const override { return trainrun::input_config(weights_); }
  std::string classifier_pattern() const override { return "head.fc.*"; }
  // timm's ConvNeXt.group_matcher(coarse=False): stem; stages.S.downsample with suffix (0,), so
  // it shares a layer with stages.S.blocks.0; stages.S.blocks.B; (timm's norm_pre, (99999,), has
  // no parameters here). The head matches nothing: the last layer.
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^stem)"},
            {"blocks", R"(^stages\.(\d+)\.downsample)", {0}},
            {"blocks", R"(^stages\.(\d+)\.blocks\.(\d+))"}};
  }
  std::string published_weights() const override { return hub_id(weights_); }

  // timm's ConvNeXt.set_grad_checkpointing: every stage's checkpoint_seq over its blocks (each
  // block recomputed on its own; downsample, stem and head never).
  std::vector<std::string> checkpoint_stages() const override { return {"stages.0", "stages.1", "stages.2", "stages.3"}; }
  void set_activation_checkpointing(const std::vector<std::string>& stages, CheckpointBlock checkpoint) override {
    for (std::size_t s = 0; s < checkpointed_.size(); ++s)
      checkpointed_[s] = std::find(stages.begin(), stages.end(), "stages." + std::to_string(s)) != stages.end();
    checkpoint_ = std::move(checkpoint);
  }

 private:
  // timm's _init_weights through named_apply: trunc_normal_(std .02) on every Conv2d and Linear
  // weight in module order, zero biases; head.fc's weight and bias then times head_init_scale.
  void init_weights(double head_init_scale) {
    if (weight_init_skipped()) return;
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        trunc_normal_(c->weight, 0.02);
        nn::init::zeros_(c->bias);
      } else if (auto* l = m->as<nn::Linear>()) {
        trunc_normal_(l->weight, 0.02);
        nn::init::zeros_(l->bias);
      }
    }
    head_->fc->weight.mul_(head_init_scale);
    head_->fc->bias.mul_(head_init_scale);
  }

  nn::Sequential stem_{nullptr};
  std::vector<ConvNeXtStage> stages_;
  ConvNeXtHead head_{nullptr};
  std::array<bool, 4> checkpointed_{};  // train.activation_checkpointing, per stage
  CheckpointBlock checkpoint_;
  PretrainedCfg weights_;
};

// timm's @register_model functions: each name's model_args.
const Variants<ConvNeXtArgs> kConvNeXts = {
    {"convnext_tiny", {.depths = {3, 3, 9, 3}, .dims = {96, 192, 384, 768}}},
    {"convnext_small", {.depths = {3, 3, 27, 3}, .dims = {96, 192, 384, 768}}},
    {"convnext_base", {.depths = {3, 3, 27, 3}, .dims = {128, 256, 512, 1024}}},
};

// timm's default_cfgs, the default tag of each name (convnext's _cfg: bicubic, ImageNet mean/std,
// 224): its own ImageNet-12k -> 1k fine-tunes for tiny and small, Facebook's ImageNet-22k -> 1k for base.
const std::vector<PretrainedCfg> kConvNeXtCfgs = {
    {.tag = "convnext_tiny.in12k_ft_in1k", .crop_pct = 0.95},
    {.tag = "convnext_small.in12k_ft_in1k", .crop_pct = 0.95},
    {.tag = "convnext_base.fb_in22k_ft_in1k"},
};

std::string convnext_description(const ConvNeXtArgs& a, const PretrainedCfg& weights) {
  return fmt::format("timm's ConvNeXt: patch-4 stem, depths [{}], dims [{}] ({})", fmt::join(a.depths, ","),
                     fmt::join(a.dims, ","), describe_input(weights));
}

Schema convnext_schema(const ConvNeXtArgs& /*arch*/, const PretrainedCfg& /*weights*/) {
  Schema schema;
  add_timm_head_keys(schema, "timm");
  return add_timm_drop_keys(schema, "dropout before head.fc (timm's drop_rate)")
      .add("head_init_scale", Type::Float, yaml("1.0"), "head.fc's initial weight and bias times this (timm's head_init_scale)")
      .min(0);
}

Kind<Classifier>::Factory convnext_factory(const ConvNeXtArgs& arch, const PretrainedCfg& weights) {
  return [arch, weights](const Config& c) -> std::shared_ptr<Classifier> {
    ConvNeXtOptions o;
    o.arch = arch;
    o.weights = weights;
    read_timm_keys(c, o);
    o.head_init_scale = c.get<double>("head_init_scale");
    return std::make_shared<ConvNeXtImpl>(o);
  };
}

[[maybe_unused]] const bool kConvNeXtsRegistered =
    register_variants(kConvNeXts, kConvNeXtCfgs, convnext_description, convnext_schema, convnext_factory);

}  // namespace

}  // namespace trainrun
