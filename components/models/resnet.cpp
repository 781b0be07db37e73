// The ResNet family, as timm's timm/models/resnet.py: one ResNet class, variants as data (kResNets,
// each name's model_args) and their published weights' settings apart (kResNetCfgs, timm's
// default_cfgs). resnet18 is torchvision's (its init, its weights); the others are timm's.
//
// Module names, registration order and construction order follow torchvision / timm, so the
// state_dict keys are theirs (conv1.weight or conv1.0/1/3/4/6.*, bn1.*, layer1.0.conv1.weight,
// layerN.0.downsample.{0,1} or {1,2}, fc.*) and a seeded model starts from the very weights
// `torch.manual_seed(s); torchvision.models.resnet18()` / `timm.create_model('resnet50d')` draw.
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace trainrun {
namespace {

namespace nn = torch::nn;

enum class BlockType { Basic, Bottleneck };
enum class Stem { Plain, Deep };  // one 7x7 conv; or timm's stem_type 'deep', three 3x3 convs
enum class Origin { Timm, Torchvision };  // whose model it is: its init and its name

// The architecture, as the model_args of timm's @register_model functions.
struct ResNetArgs {
  BlockType block = BlockType::Basic;
  std::array<int64_t, 4> layers{2, 2, 2, 2};
  Stem stem = Stem::Plain;
  int64_t stem_width = 32;  // the deep stem's convs: stem_width, stem_width, 2 * stem_width
  bool avg_down = false;    // shortcut = AvgPool2d(2) -> 1x1 conv -> BN, instead of a strided 1x1 conv
  // zero_init_last's default: timm's zero_init_last=True, torchvision's zero_init_residual=False.
  Origin origin = Origin::Timm;
};

// What a recipe chooses on top of the architecture.
struct ResNetOptions : TimmKeys {  // drop_rate: dropout before fc
  ResNetArgs arch;
  PretrainedCfg weights;
  bool zero_init_last = false;
};

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

struct BlockOptions {
  int64_t inplanes = 64;
  int64_t planes = 64;
  int64_t stride = 1;
  nn::Sequential downsample{nullptr};  // built by the stage before the block (construction order = torchvision's)
  double drop_path = 0.0;
};

class ResidualBlock : public nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  // Zeroes the last BN's weight so the block starts as the identity (Goyal et al.; timm's default).
  virtual void zero_init_last() = 0;

 protected:
  // Registered after the block's own layers, as in torchvision and timm (module order = init order).
  void add_shortcut(const BlockOptions& o) {
    if (o.downsample) downsample = register_module("downsample", o.downsample);
    drop_prob = o.drop_path;
  }
  at::Tensor finish(at::Tensor branch, const at::Tensor& x) {
    branch = drop_path(branch, drop_prob, is_training());
    branch += downsample ? downsample->forward(x) : x;
    return branch.relu_();
  }

 private:
  nn::Sequential downsample{nullptr};
  double drop_prob = 0.0;
};

class BasicBlockImpl : public ResidualBlock {
 public:
  static constexpr int64_t expansion = 1;
  explicit BasicBlockImpl(const BlockOptions& o)
      : conv1(register_module("conv1", conv(o.inplanes, o.planes, 3, o.stride))),
        bn1(register_module("bn1", nn::BatchNorm2d(o.planes))),
        conv2(register_module("conv2", conv(o.planes, o.planes, 3))),
        bn2(register_module("bn2", nn::BatchNorm2d(o.planes))) {
    add_shortcut(o);
  }

  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = bn1(conv1(x)).relu_();
    return finish(bn2(conv2(y)), x);
  }
  void zero_init_last() override { nn::init::zeros_(bn2->weight); }

 private:
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
};
TORCH_MODULE(BasicBlock);

// torchvision's "ResNet v1.5" bottleneck: the stride sits on the 3x3 conv.
class BottleneckImpl : public ResidualBlock {
 public:
  static constexpr int64_t expansion = 4;
  explicit BottleneckImpl(const BlockOptions& o)
      : conv1(register_module("conv1", conv(o.inplanes, o.planes, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(o.planes))),
        conv2(register_module("conv2", conv(o.planes, o.planes, 3, o.stride))),
        bn2(register_module("bn2", nn::BatchNorm2d(o.planes))),
        conv3(register_module("conv3", conv(o.planes, o.planes * expansion, 1))),
        bn3(register_module("bn3", nn::BatchNorm2d(o.planes * expansion))) {
    add_shortcut(o);
  }

  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor y = bn1(conv1(x)).relu_();
    y = bn2(conv2(y)).relu_();
    return finish(bn3(conv3(y)), x);
  }
  void zero_init_last() override { nn::init::zeros_(bn3->weight); }

 private:
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
};
TORCH_MODULE(Bottleneck);

// timm's downsample_avg (pool, conv, BN: keys .1 and .2) or downsample_conv (strided conv, BN: .0 and .1).
nn::Sequential make_shortcut(int64_t in, int64_t out, int64_t stride, bool avg_down) {
  nn::Sequential s;
  if (avg_down && stride == 1) s->push_back(nn::Identity());
  if (avg_down && stride != 1)
    s->push_back(nn::AvgPool2d(nn::AvgPool2dOptions(2).stride(stride).ceil_mode(true).count_include_pad(false)));
  s->push_back(conv(in, out, 1, avg_down ? 1 : stride));
  s->push_back(nn::BatchNorm2d(out));
  return s;
}

class ResNetImpl : public Classifier {
 public:
  explicit ResNetImpl(const ResNetOptions& o) : drop_rate_(o.drop_rate), weights_(o.weights) {
    const ResNetArgs& a = o.arch;
    int64_t inplanes = a.stem == Stem::Deep ? a.stem_width * 2 : 64;
    if (a.stem == Stem::Deep) {
      // One push_back per layer: constructor arguments have no defined order, and each conv's
      // default init draws from the RNG, so the order decides the seeded weights.
      nn::Sequential stem;
      stem->push_back(conv(3, a.stem_width, 3, 2));
      stem->push_back(nn::BatchNorm2d(a.stem_width));
      stem->push_back(nn::ReLU());
      stem->push_back(conv(a.stem_width, a.stem_width, 3));
      stem->push_back(nn::BatchNorm2d(a.stem_width));
      stem->push_back(nn::ReLU());
      stem->push_back(conv(a.stem_width, inplanes, 3));
      deep_stem_ = register_module("conv1", stem);
    } else {
      conv1_ = register_module("conv1", conv(3, inplanes, 7, 2));
    }
    bn1_ = register_module("bn1", nn::BatchNorm2d(inplanes));

    int64_t expansion = a.block == BlockType::Basic ? BasicBlockImpl::expansion : BottleneckImpl::expansion;
    int64_t total = 0, index = 0;
    for (int64_t n : a.layers) total += n;
    const std::array<int64_t, 4> widths{64, 128, 256, 512};
    for (std::size_t stage = 0; stage < 4; ++stage) {
      int64_t stride = stage == 0 ? 1 : 2, out = widths[stage] * expansion;
      nn::Sequential layer;
      for (int64_t b = 0; b < a.layers[stage]; ++b, ++index) {
        BlockOptions bo;
        bo.inplanes = inplanes;
        bo.planes = widths[stage];
        bo.stride = b == 0 ? stride : 1;
        if (b == 0 && (stride != 1 || inplanes != out)) bo.downsample = make_shortcut(inplanes, out, stride, a.avg_down);
        bo.drop_path = total > 1 ? o.drop_path_rate * double(index) / double(total - 1) : 0.0;
        if (a.block == BlockType::Basic) layer->push_back(BasicBlock(bo));
        else layer->push_back(Bottleneck(bo));
        inplanes = out;
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", nn::Linear(512 * expansion, o.num_classes));
    init_weights(o.zero_init_last);
  }

  at::Tensor forward(const at::Tensor& input) override {
    at::Tensor x = bn1_(deep_stem_ ? deep_stem_->forward(input) : conv1_(input)).relu_();
    x = torch::max_pool2d(x, 3, 2, 1);
    for (std::size_t s = 0; s < layers_.size(); ++s)
      x = checkpointed_[s] && at::GradMode::is_enabled() ? forward_checkpointed(layers_[s], x) : layers_[s]->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    if (drop_rate_ > 0) x = torch::dropout(x, drop_rate_, is_training());
    return fc_(x);
  }

  InputConfig input_config() const override { return trainrun::input_config(weights_); }
  std::string classifier_pattern() const override { return "fc.*"; }
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^conv1|bn1|maxpool)"}, {"blocks", R"(^layer(\d+)\.(\d+))"}};  // timm's ResNet.group_matcher
  }
  std::string published_weights() const override { return hub_id(weights_); }
  bool prefers_channels_last() const override { return true; }

  // timm's ResNet.set_grad_checkpointing: checkpoint_seq([layer1, ..., layer4], flatten=True)
  // recomputes each residual block on its own; the stem and the head are never checkpointed.
  std::vector<std::string> checkpoint_stages() const override { return {"layer1", "layer2", "layer3", "layer4"}; }
  void set_activation_checkpointing(const std::vector<std::string>& stages, CheckpointBlock checkpoint) override {
    for (std::size_t s = 0; s < checkpointed_.size(); ++s)
      checkpointed_[s] = std::find(stages.begin(), stages.end(), "layer" + std::to_string(s + 1)) != stages.end();
    checkpoint_ = std::move(checkpoint);
  }

 private:
  at::Tensor forward_checkpointed(nn::Sequential& layer, at::Tensor x) {
    for (const auto& item : *layer) {
      auto block = std::dynamic_pointer_cast<ResidualBlock>(item.ptr());
      x = checkpoint_(block, [block](const at::Tensor& in) { return block->forward(in); }, x);
    }
    return x;
  }

  // torchvision's / timm's init_weights: Kaiming-normal (fan_out) convs in module order; BN and
  // fc keep their PyTorch defaults.
  void init_weights(bool zero_init_last) {
    if (weight_init_skipped()) return;
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false))
      if (auto* c = m->as<nn::Conv2d>()) nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut, torch::kReLU);
    if (!zero_init_last) return;
    for (auto& m : modules(false))
      if (auto* block = dynamic_cast<ResidualBlock*>(m.get())) block->zero_init_last();
  }

  nn::Conv2d conv1_{nullptr};          // conv1 is one 7x7 conv,
  nn::Sequential deep_stem_{nullptr};  // or the deep stem
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  nn::Linear fc_{nullptr};
  std::array<bool, 4> checkpointed_{};  // train.activation_checkpointing, per stage
  CheckpointBlock checkpoint_;
  double drop_rate_;
  PretrainedCfg weights_;
};

// timm's @register_model functions: each name's model_args.
const Variants<ResNetArgs> kResNets = {
    {"resnet18", {.block = BlockType::Basic, .layers = {2, 2, 2, 2}, .origin = Origin::Torchvision}},
    {"resnet34", {.block = BlockType::Basic, .layers = {3, 4, 6, 3}}},
    {"resnet50", {.block = BlockType::Bottleneck, .layers = {3, 4, 6, 3}}},
    {"resnet101", {.block = BlockType::Bottleneck, .layers = {3, 4, 23, 3}}},
    {"resnet152", {.block = BlockType::Bottleneck, .layers = {3, 8, 36, 3}}},
    {"resnet26d", {.block = BlockType::Bottleneck, .layers = {2, 2, 2, 2}, .stem = Stem::Deep, .avg_down = true}},
    {"resnet50d", {.block = BlockType::Bottleneck, .layers = {3, 4, 6, 3}, .stem = Stem::Deep, .avg_down = true}},
    {"resnet101d", {.block = BlockType::Bottleneck, .layers = {3, 4, 23, 3}, .stem = Stem::Deep, .avg_down = true}},
};

// timm's default_cfgs, the default tag of each name: the RSB recipes (a1 / a1h: crop_pct 0.95),
// "bag of tricks" (bt), RandAugment (ra2: resnet101d's is trained and evaluated at 256x256).
// resnet18 is torchvision's, so its IMAGENET1K_V1 weights as timm publishes them (tv_in1k: bilinear,
// torchvision's Resize(256), CenterCrop(224)), not timm's default resnet18.a1_in1k. resnet50d's
// test_crop_pct 0.95 is for 288x288 tests.
const std::vector<PretrainedCfg> kResNetCfgs = {
    {.tag = "resnet18.tv_in1k", .interpolation = "bilinear"},
    {.tag = "resnet34.a1_in1k", .crop_pct = 0.95},
    {.tag = "resnet50.a1_in1k", .crop_pct = 0.95},
    {.tag = "resnet101.a1h_in1k", .crop_pct = 0.95},
    {.tag = "resnet152.a1h_in1k", .crop_pct = 0.95},
    {.tag = "resnet26d.bt_in1k"},
    {.tag = "resnet50d.ra2_in1k"},
    {.tag = "resnet101d.ra2_in1k", .input_size = 256, .crop_pct = 0.95},
};

// "timm's ResNet-50-D: deep 3x3 stem 32/32/64, avg-pool shortcuts, Bottleneck [3,4,6,3] (ImageNet
// mean/std, 224x224)": the depth counts the convs on the main path and fc, "-D" is the deep stem
// with average-pool shortcuts (Bag of Tricks' ResNet-D).
std::string resnet_description(const ResNetArgs& a, const PretrainedCfg& weights) {
  const bool bottleneck = a.block == BlockType::Bottleneck;
  int64_t depth = 2;
  for (int64_t n : a.layers) depth += n * (bottleneck ? 3 : 2);
  std::string stem = a.stem == Stem::Deep ? fmt::format("deep 3x3 stem {0}/{0}/{1}", a.stem_width, 2 * a.stem_width)
                                          : "7x7 stem";
  return fmt::format("{}'s ResNet-{}{}: {}{}, {} [{}] ({})", a.origin == Origin::Timm ? "timm" : "torchvision", depth,
                     a.stem == Stem::Deep && a.avg_down ? "-D" : "", stem, a.avg_down ? ", avg-pool shortcuts" : "",
                     bottleneck ? "Bottleneck" : "BasicBlock", fmt::join(a.layers, ","), describe_input(weights));
}

Schema resnet_schema(const ResNetArgs& arch, const PretrainedCfg& /*weights*/) {
  Schema schema;
  add_timm_head_keys(schema, "torchvision / timm");
  return add_timm_drop_keys(schema, "dropout before fc (timm's drop_rate)")
      .add("zero_init_last", Type::Bool, YAML::Node(arch.origin == Origin::Timm),
           "start each residual block's last BN weight at zero (timm: true, torchvision: false)");
}

Kind<Classifier>::Factory resnet_factory(const ResNetArgs& arch, const PretrainedCfg& weights) {
  return [arch, weights](const Config& c) -> std::shared_ptr<Classifier> {
    ResNetOptions o;
    o.arch = arch;
    o.weights = weights;
    read_timm_keys(c, o);
    o.zero_init_last = c.get<bool>("zero_init_last");
    return std::make_shared<ResNetImpl>(o);
  };
}

[[maybe_unused]] const bool kResNetsRegistered =
    register_variants(kResNets, kResNetCfgs, resnet_description, resnet_schema, resnet_factory);

}  // namespace

}  // namespace trainrun
