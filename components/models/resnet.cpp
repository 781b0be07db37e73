// The ResNet family, as timm's timm/models/resnet.py: one ResNet class, variants as data.
//
//   resnet18   = BasicBlock, [2, 2, 2, 2]                                     (torchvision's resnet18)
//   resnet34   = BasicBlock, [3, 4, 6, 3]                                     (timm's, = torchvision's keys)
//   resnet50   = Bottleneck, [3, 4, 6, 3]                                     (timm's, = torchvision's keys)
//   resnet101  = Bottleneck, [3, 4, 23, 3]                                    (timm's, = torchvision's keys)
//   resnet152  = Bottleneck, [3, 8, 36, 3]                                    (timm's, = torchvision's keys)
//   resnet26d  = Bottleneck, [2, 2, 2, 2],  stem_type 'deep', stem_width 32, avg_down  (timm's)
//   resnet50d  = Bottleneck, [3, 4, 6, 3],  stem_type 'deep', stem_width 32, avg_down  (timm's)
//   resnet101d = Bottleneck, [3, 4, 23, 3], stem_type 'deep', stem_width 32, avg_down  (timm's)
//
// Module names, registration order and construction order follow torchvision / timm, so the
// state_dict keys are theirs (conv1.weight or conv1.0/1/3/4/6.*, bn1.*, layer1.0.conv1.weight,
// layerN.0.downsample.{0,1} or {1,2}, fc.*) and a seeded model starts from the very weights
// `torch.manual_seed(s); torchvision.models.resnet18()` / `timm.create_model('resnet50d')` draw.
#include "components/models/model.h"
#include "components/models/timm_family.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>

namespace trainrun {
namespace {

namespace nn = torch::nn;

enum class BlockType { Basic, Bottleneck };

// The architecture, as the arguments of timm's @register_model functions.
struct ResNetConfig {
  BlockType block = BlockType::Basic;
  std::array<int64_t, 4> layers{2, 2, 2, 2};
  std::string stem_type;          // "" = one 7x7 conv; "deep" = 3x3 convs of stem_width, stem_width, 2*stem_width
  int64_t stem_width = 64;
  bool avg_down = false;          // shortcut = AvgPool2d(2) -> 1x1 conv -> BN, instead of a strided 1x1 conv
  bool zero_init_last = false;    // default: torchvision's zero_init_residual=False, timm's zero_init_last=True
  std::string published;          // model.pretrained: true (timm's default pretrained tag on the Hub)
  // The published weights' pretrained_cfg (timm's default_cfgs entry for that tag).
  std::string interpolation = "bilinear";
  double crop_pct = 0.875;
  int64_t input_size = 224;       // H = W
};

// What a recipe chooses on top of the architecture.
struct ResNetOptions : TimmKeys {  // drop_rate: dropout before fc
  ResNetConfig arch;
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
  explicit ResNetImpl(const ResNetOptions& o)
      : drop_rate_(o.drop_rate), published_(o.arch.published), interpolation_(o.arch.interpolation),
        crop_pct_(o.arch.crop_pct), input_size_(o.arch.input_size) {
    const ResNetConfig& a = o.arch;
    int64_t inplanes = a.stem_type == "deep" ? a.stem_width * 2 : 64;
    if (a.stem_type == "deep") {
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

  InputConfig input_config() const override {
    InputConfig in;
    in.mean = {0.485, 0.456, 0.406};  // timm's IMAGENET_DEFAULT_*
    in.std = {0.229, 0.224, 0.225};
    in.input_size = {3, input_size_, input_size_};
    in.interpolation = interpolation_;
    in.crop_pct = crop_pct_;
    return in;
  }
  std::string classifier_pattern() const override { return "fc.*"; }
  std::vector<GroupRule> group_matcher() const override {
    return {{"stem", R"(^conv1|bn1|maxpool)"}, {"blocks", R"(^layer(\d+)\.(\d+))"}};  // timm's ResNet.group_matcher
  }
  std::string published_weights() const override { return published_; }
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
  std::string published_;
  std::string interpolation_;
  double crop_pct_;
  int64_t input_size_;
};

// torchvision's IMAGENET1K_V1 weights, as timm publishes them on the Hub (our resnet18 is
// torchvision's architecture, so not timm's default resnet18.a1_in1k).
ResNetConfig resnet18_config() {
  ResNetConfig c;
  c.published = "hf-hub:timm/resnet18.tv_in1k";
  c.interpolation = "bilinear";  // timm's _cfg for resnet18.tv_in1k: torchvision's Resize(256), CenterCrop(224)
  c.crop_pct = 0.875;
  return c;
}

ResNetConfig resnet50d_config() {
  ResNetConfig c;
  c.block = BlockType::Bottleneck;
  c.layers = {3, 4, 6, 3};
  c.stem_type = "deep";
  c.stem_width = 32;
  c.avg_down = true;
  c.zero_init_last = true;
  c.published = "hf-hub:timm/resnet50d.ra2_in1k";  // the first (default) resnet50d tag in timm's default_cfgs
  c.interpolation = "bicubic";  // its _ttcfg: bicubic, crop_pct 0.875 (test_crop_pct 0.95 is for 288x288 tests)
  c.crop_pct = 0.875;
  return c;
}

// timm's own resnets: zero_init_last (its default), the published weights and their pretrained_cfg
// (timm's default tag: `timm.create_model(NAME).pretrained_cfg`).
ResNetConfig timm_resnet(BlockType block, std::array<int64_t, 4> layers, bool deep, const char* tag,
                         double crop_pct, int64_t input_size = 224) {
  ResNetConfig c;
  c.block = block;
  c.layers = layers;
  if (deep) {  // the "D" variant: deep 3x3 stem 32/32/64 and average-pool shortcuts
    c.stem_type = "deep";
    c.stem_width = 32;
    c.avg_down = true;
  }
  c.zero_init_last = true;
  c.published = std::string("hf-hub:timm/") + tag;
  c.interpolation = "bicubic";
  c.crop_pct = crop_pct;
  c.input_size = input_size;
  return c;
}

// timm's default tags: the RSB recipes (a1 / a1h: bicubic, crop_pct 0.95), "bag of tricks" (bt),
// RandAugment (ra2); resnet101d.ra2_in1k is trained and evaluated at 256x256.
ResNetConfig resnet34_config() { return timm_resnet(BlockType::Basic, {3, 4, 6, 3}, false, "resnet34.a1_in1k", 0.95); }
ResNetConfig resnet50_config() { return timm_resnet(BlockType::Bottleneck, {3, 4, 6, 3}, false, "resnet50.a1_in1k", 0.95); }
ResNetConfig resnet101_config() { return timm_resnet(BlockType::Bottleneck, {3, 4, 23, 3}, false, "resnet101.a1h_in1k", 0.95); }
ResNetConfig resnet152_config() { return timm_resnet(BlockType::Bottleneck, {3, 8, 36, 3}, false, "resnet152.a1h_in1k", 0.95); }
ResNetConfig resnet26d_config() { return timm_resnet(BlockType::Bottleneck, {2, 2, 2, 2}, true, "resnet26d.bt_in1k", 0.875); }
ResNetConfig resnet101d_config() {
  return timm_resnet(BlockType::Bottleneck, {3, 4, 23, 3}, true, "resnet101d.ra2_in1k", 0.95, 256);
}

Schema resnet_schema(const ResNetConfig& arch) {
  Schema schema;
  add_timm_head_keys(schema, "torchvision / timm");
  return add_timm_drop_keys(schema, "dropout before fc (timm's drop_rate)")
      .add("zero_init_last", Type::Bool, YAML::Node(arch.zero_init_last),
           "start each residual block's last BN weight at zero (timm: true, torchvision: false)");
}

Kind<Classifier>::Factory resnet_factory(const ResNetConfig& arch) {
  return [arch](const Config& c) -> std::shared_ptr<Classifier> {
    ResNetOptions o;
    o.arch = arch;
    read_timm_keys(c, o);
    o.zero_init_last = c.get<bool>("zero_init_last");
    return std::make_shared<ResNetImpl>(o);
  };
}

}  // namespace

TRAINRUN_REGISTER(Classifier, "resnet18", "torchvision's ResNet-18: 7x7 stem, BasicBlock [2,2,2,2] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet18_config()), resnet_factory(resnet18_config()));
TRAINRUN_REGISTER(Classifier, "resnet50d",
                  "timm's ResNet-50-D: deep 3x3 stem 32/32/64, avg-pool shortcuts, Bottleneck [3,4,6,3] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet50d_config()), resnet_factory(resnet50d_config()));
TRAINRUN_REGISTER(Classifier, "resnet34", "timm's ResNet-34: 7x7 stem, BasicBlock [3,4,6,3] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet34_config()), resnet_factory(resnet34_config()));
TRAINRUN_REGISTER(Classifier, "resnet50", "timm's ResNet-50: 7x7 stem, Bottleneck [3,4,6,3] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet50_config()), resnet_factory(resnet50_config()));
TRAINRUN_REGISTER(Classifier, "resnet101", "timm's ResNet-101: 7x7 stem, Bottleneck [3,4,23,3] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet101_config()), resnet_factory(resnet101_config()));
TRAINRUN_REGISTER(Classifier, "resnet152", "timm's ResNet-152: 7x7 stem, Bottleneck [3,8,36,3] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet152_config()), resnet_factory(resnet152_config()));
TRAINRUN_REGISTER(Classifier, "resnet26d",
                  "timm's ResNet-26-D: deep 3x3 stem 32/32/64, avg-pool shortcuts, Bottleneck [2,2,2,2] (ImageNet mean/std, 224x224)",
                  resnet_schema(resnet26d_config()), resnet_factory(resnet26d_config()));
TRAINRUN_REGISTER(Classifier, "resnet101d",
                  "timm's ResNet-101-D: deep 3x3 stem 32/32/64, avg-pool shortcuts, Bottleneck [3,4,23,3] (ImageNet mean/std, 256x256)",
                  resnet_schema(resnet101d_config()), resnet_factory(resnet101d_config()));

}  // namespace trainrun
