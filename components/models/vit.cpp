// The Vision Transformer family, as timm's timm/models/vision_transformer.py with its defaults:
// one VisionTransformer class, variants as data (kViTs, each name's model_args) and their published
// weights' settings apart (kViTCfgs, timm's default_cfgs).
//
// A class token, a learned position embedding that covers it (timm's no_embed_class=False), pre-norm
// blocks (LayerNorm eps 1e-6, qkv with bias, exact GELU, no LayerScale), a final norm and the
// class token's features into the head (global_pool='token'). Module names, registration order and
// construction order are timm's, so the state_dict keys are (cls_token, pos_embed,
// patch_embed.proj.*, blocks.N.{norm1, attn.qkv, attn.proj, norm2, mlp.fc1, mlp.fc2}.*, norm.*,
// head.*) and a seeded model draws the very weights `timm.create_model(NAME)` does.
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainrun {
namespace {

namespace nn = torch::nn;

// The architecture, as the model_args of timm's @register_model functions.
struct ViTArgs {
  int64_t patch_size = 16;
  int64_t embed_dim = 768;
  int64_t depth = 12;
  int64_t num_heads = 12;
  double mlp_ratio = 4.0;
};

// What a recipe chooses on top of the architecture.
struct ViTOptions : TimmKeys {  // drop_rate: dropout before head (timm's head_drop)
  ViTArgs arch;
  PretrainedCfg weights;
  int64_t img_size = 224;       // timm's img_size: the input's height and width, the grid of pos_embed
};

nn::LayerNorm vit_layer_norm(int64_t dim) { return nn::LayerNorm(nn::LayerNormOptions({dim}).eps(1e-6)); }

// timm.layers.Attention (fused_attn off: its explicit path, which is also the math of
// F.scaled_dot_product_attention): qkv split into heads with reshape/permute/select, so the batch
// stays free in a trace.
class ViTAttentionImpl : public nn::Module {
 public:
  ViTAttentionImpl(int64_t dim, int64_t heads)
      : heads_(heads), head_dim_(dim / heads), scale_(std::pow(double(dim / heads), -0.5)),
        qkv(register_module("qkv", nn::Linear(nn::LinearOptions(dim, dim * 3).bias(true)))),
        proj(register_module("proj", nn::Linear(dim, dim))) {}

  at::Tensor forward(const at::Tensor& x) {
    const int64_t n = x.size(1), c = x.size(2);
    at::Tensor qkv_heads = qkv(x).reshape({-1, n, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4});
    at::Tensor q = qkv_heads.select(0, 0), k = qkv_heads.select(0, 1), v = qkv_heads.select(0, 2);
    at::Tensor attn = torch::matmul(q * scale_, k.transpose(-2, -1)).softmax(-1);
    return proj(torch::matmul(attn, v).transpose(1, 2).reshape({-1, n, c}));
  }

 private:
  int64_t heads_, head_dim_;
  double scale_;
  nn::Linear qkv, proj;
};
TORCH_MODULE(ViTAttention);

// timm.layers.Mlp: fc1, exact GELU, fc2.
class ViTMlpImpl : public nn::Module {
 public:
  ViTMlpImpl(int64_t dim, int64_t hidden)
      : fc1(register_module("fc1", nn::Linear(dim, hidden))), fc2(register_module("fc2", nn::Linear(hidden, dim))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2(torch::gelu(fc1(x))); }

 private:
  nn::Linear fc1, fc2;
};
TORCH_MODULE(ViTMlp);

// timm's vision_transformer.Block: x + attn(norm1(x)), then x + mlp(norm2(x)).
class ViTBlockImpl : public nn::Module {
 public:
  ViTBlockImpl(const ViTArgs& a, double drop_path)
      : norm1(register_module("norm1", vit_layer_norm(a.embed_dim))),
        attn(register_module("attn", ViTAttention(a.embed_dim, a.num_heads))),
        norm2(register_module("norm2", vit_layer_norm(a.embed_dim))),
        mlp(register_module("mlp", ViTMlp(a.embed_dim, int64_t(double(a.embed_dim) * a.mlp_ratio)))),
        drop_path_(drop_path) {}

  at::Tensor forward(at::Tensor x) {
    x = x + drop_path(attn(norm1(x)), drop_path_, is_training());
    return x + drop_path(mlp(norm2(x)), drop_path_, is_training());
  }

 private:
  nn::LayerNorm norm1;
  ViTAttention attn;
  nn::LayerNorm norm2;
  ViTMlp mlp;
  double drop_path_;
};
TORCH_MODULE(ViTBlock);

// timm.layers.resample_abs_pos_embed: the class token's entry kept, the grid's resized as an image
// (float32, bicubic, antialias, align_corners False) from a square old grid to `grid` x `grid`.
at::Tensor vit_resample_pos_embed(const at::Tensor& posemb, int64_t grid, int64_t prefix = 1) {
  const int64_t old_grid = int64_t(std::sqrt(double(posemb.size(1) - prefix))), dim = posemb.size(2);
  at::Tensor grid_part = posemb.slice(1, prefix).to(torch::kFloat).reshape({1, old_grid, old_grid, -1}).permute({0, 3, 1, 2});
  grid_part = nn::functional::interpolate(
      grid_part,
      nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{grid, grid}).mode(torch::kBicubic).align_corners(false).antialias(true));
  grid_part = grid_part.permute({0, 2, 3, 1}).reshape({1, -1, dim}).to(posemb.scalar_type());
  return torch::cat({posemb.slice(1, 0, prefix), grid_part}, 1);
}

class VisionTransformerImpl : public Classifier {
 public:
  explicit VisionTransformerImpl(const ViTOptions& o)
      : arch_(o.arch), weights_(o.weights), img_size_(o.img_size), grid_(o.img_size / o.arch.patch_size), drop_rate_(o.drop_rate) {
    const int64_t dim = arch_.embed_dim;
    patch_embed_ = register_module("patch_embed", std::make_shared<nn::Module>());
    proj_ = patch_embed_->register_module(
        "proj", nn::Conv2d(nn::Conv2dOptions(3, dim, arch_.patch_size).stride(arch_.patch_size).bias(true)));
    cls_token_ = register_parameter("cls_token", torch::empty({1, 1, dim}));
    pos_embed_ = register_parameter("pos_embed", torch::empty({1, grid_ * grid_ + 1, dim}));
    // timm's calculate_drop_path_rates: float32 linspace(0, rate, depth), one rate per block.
    at::Tensor dpr = torch::linspace(0.0, o.drop_path_rate, arch_.depth);
    blocks_ = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < arch_.depth; ++i) blocks_->push_back(ViTBlock(arch_, dpr[i].item<double>()));
    norm_ = register_module("norm", vit_layer_norm(dim));
    head_ = register_module("head", nn::Linear(dim, o.num_classes));
    init_weights();
  }

  at::Tensor forward(const at::Tensor& input) override {
    if (input.size(2) != img_size_ || input.size(3) != img_size_)
      throw std::invalid_argument("vision transformer built for " + std::to_string(img_size_) + "x" + std::to_string(img_size_) +
                                  " inputs (model.img_size) got " + std::to_string(input.size(2)) + "x" + std::to_string(input.size(3)));
    at::Tensor x = proj_(input).flatten(2).transpose(1, 2);
    // cls_token.expand(B, -1, -1) without reading B: expand_as keeps the batch free in a trace.
    x = torch::cat({cls_token_.expand_as(x.slice(1, 0, 1)), x}, 1) + pos_embed_;
    const bool checkpointed = checkpointed_ && at::GradMode::is_enabled();
    for (const auto& block : *blocks_) {
      auto b = std::static_pointer_cast<ViTBlockImpl>(block);
      x = checkpointed ? checkpoint_(b, [b](const at::Tensor& in) { return b->forward(in); }, x) : b->forward(x);
    }
    x = norm_(x).select(1, 0);  // global_pool 'token'
    if (drop_rate_ > 0) x = torch::dropout(x, drop_rate_, is_training());
    return head_(x);
  }

  // The weights' pretrained_cfg at img_size, the only size the position embedding takes.
  InputConfig input_config() const override {
    InputConfig in = trainrun::input_config(weights_);
    in.input_size = {3, img_size_, img_size_};
    in.fixed_input_size = true;
    return in;
  }
  std::string classifier_pattern() const override { return "head.*"; }
  // timm's VisionTransformer.group_matcher: the embeddings as the stem, one layer per block, and
  // the final norm in the last block's layer (MATCH_PREV_GROUP).
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^cls_token|reg_token|pos_embed|patch_embed)"}, {"blocks", R"(^blocks\.(\d+))"}, {"blocks", R"(^norm)", {99999}}};
  }
  std::string published_weights() const override { return hub_id(weights_); }

  // timm's set_grad_checkpointing: checkpoint_seq(self.blocks) recomputes each block on its own.
  std::vector<std::string> checkpoint_stages() const override { return {"blocks"}; }
  void set_activation_checkpointing(const std::vector<std::string>& stages, CheckpointBlock checkpoint) override {
    checkpointed_ = std::find(stages.begin(), stages.end(), "blocks") != stages.end();
    checkpoint_ = std::move(checkpoint);
  }

  // timm's checkpoint_filter_fn: pos_embed of another grid (weights made at another img_size) is
  // resampled to this model's, as create_model(NAME, img_size=..., pretrained=True) does.
  std::vector<std::string> adapt_pretrained(TensorList& tensors) const override {
    for (auto& [name, value] : tensors) {
      if (name != "pos_embed" || value.dim() != 3 || value.size(1) == pos_embed_.size(1)) continue;
      const int64_t old_grid = int64_t(std::sqrt(double(value.size(1) - 1)));
      value = vit_resample_pos_embed(value, grid_);
      return {"pos_embed resampled from a " + std::to_string(old_grid) + "x" + std::to_string(old_grid) + " grid to " +
              std::to_string(grid_) + "x" + std::to_string(grid_) + " (bicubic, antialias; img_size " + std::to_string(img_size_) + ")"};
    }
    return {};
  }

 private:
  // timm's init_weights('') in its order: trunc_normal_(pos_embed, .02), normal_(cls_token, 1e-6),
  // then init_weights_vit_timm over the modules: every Linear trunc_normal_(.02) with a zero bias.
  // The patch conv and the LayerNorms keep their construction-time init.
  void init_weights() {
    torch::NoGradGuard no_grad;
    if (weight_init_skipped()) {  // made with torch::empty: zeros rather than whatever memory held
      pos_embed_.zero_();
      cls_token_.zero_();
      return;
    }
    trunc_normal_(pos_embed_, 0.02);
    nn::init::normal_(cls_token_, 0.0, 1e-6);
    for (auto& m : modules(/*include_self=*/false)) {
      auto* linear = m->as<nn::Linear>();
      if (!linear) continue;
      trunc_normal_(linear->weight, 0.02);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    }
  }

  ViTArgs arch_;
  PretrainedCfg weights_;
  int64_t img_size_;
  int64_t grid_;
  double drop_rate_;
  std::shared_ptr<nn::Module> patch_embed_;
  nn::Conv2d proj_{nullptr};
  at::Tensor cls_token_, pos_embed_;
  nn::ModuleList blocks_{nullptr};
  nn::LayerNorm norm_{nullptr};
  nn::Linear head_{nullptr};
  bool checkpointed_ = false;  // train.activation_checkpointing
  CheckpointBlock checkpoint_;
};

// timm's @register_model functions: each name's model_args.
const Variants<ViTArgs> kViTs = {
    {"vit_tiny_patch16_224", {.patch_size = 16, .embed_dim = 192, .depth = 12, .num_heads = 3}},
    {"vit_small_patch16_224", {.patch_size = 16, .embed_dim = 384, .depth = 12, .num_heads = 6}},
    {"vit_base_patch16_224", {.patch_size = 16, .embed_dim = 768, .depth = 12, .num_heads = 12}},
};

// timm's default_cfgs, the default tag of each name (its _cfg: Inception mean/std, bicubic,
// crop_pct 0.9).
const std::vector<PretrainedCfg> kViTCfgs = {
    {.tag = "vit_tiny_patch16_224.augreg_in21k_ft_in1k", .crop_pct = 0.9, .mean_std = MeanStd::Inception},
    {.tag = "vit_small_patch16_224.augreg_in21k_ft_in1k", .crop_pct = 0.9, .mean_std = MeanStd::Inception},
    {.tag = "vit_base_patch16_224.augreg2_in21k_ft_in1k", .crop_pct = 0.9, .mean_std = MeanStd::Inception},
};

std::string vit_description(const ViTArgs& a, const PretrainedCfg& weights) {
  return fmt::format("timm's ViT: {0}x{0} patches, embed {1}, {2} blocks, {3} heads, class token ({4})", a.patch_size,
                     a.embed_dim, a.depth, a.num_heads, describe_input(weights));
}

// img_size defaults to the size the published weights were trained at.
Schema vit_schema(const ViTArgs& arch, const PretrainedCfg& weights) {
  Schema schema;
  const std::string patch = std::to_string(arch.patch_size);
  add_timm_head_keys(schema, "timm", "; a pos_embed of another grid is resampled (timm's bicubic)")
      .add("img_size", Type::Int, yaml(std::to_string(weights.input_size).c_str()),
           "input height and width (timm's img_size); pos_embed has one entry per " + patch + "x" + patch +
               " patch, pretrained ones are resampled to it")
      .min(arch.patch_size);
  return add_timm_drop_keys(schema, "dropout before head (timm's drop_rate)");
}

Kind<Classifier>::Factory vit_factory(const ViTArgs& arch, const PretrainedCfg& weights) {
  return [arch, weights](const Config& c) -> std::shared_ptr<Classifier> {
    ViTOptions o;
    o.arch = arch;
    o.weights = weights;
    read_timm_keys(c, o);
    o.img_size = c.get<int64_t>("img_size");
    return std::make_shared<VisionTransformerImpl>(o);
  };
}

[[maybe_unused]] const bool kViTsRegistered = register_variants(kViTs, kViTCfgs, vit_description, vit_schema, vit_factory);

}  // namespace

}  // namespace trainrun
