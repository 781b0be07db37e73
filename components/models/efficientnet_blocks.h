// timm's _efficientnet_blocks.py for the EfficientNet and MobileNetV3 family (efficientnet.cpp),
// internal to components/models: the squeeze-excite, the three blocks the block strings name (ds,
// ir, cn) and the layer helpers they share with the builder and the trunk. Module names and
// registration order are timm's, so are the state_dict keys; defined in efficientnet_blocks.cpp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace trainrun::effnet {

namespace nn = torch::nn;

enum class Act { ReLU, SiLU, HardSwish };
enum class Gate { Sigmoid, HardSigmoid };

// timm's activation modules are built inplace=True; the in-place ops give the same values.
at::Tensor activate(at::Tensor x, Act act);

// timm.layers.make_divisible: round to the nearest multiple of `divisor`, never more than 10 % down.
int64_t make_divisible(double v, int64_t divisor = 8);

// Python's round(): halves to even, as std::nearbyint does in the default rounding mode.
int64_t python_round(double v);

// timm's create_conv2d with pad_type '': symmetric padding ((stride - 1) + (k - 1)) // 2, no bias.
nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1, bool bias = false);

// A model's squeeze-excite flavour (timm's se_layer partial and the builder's se_from_exp).
struct SEStyle {
  Gate gate = Gate::Sigmoid;
  std::optional<Act> force_act{};  // MobileNetV3: ReLU inside the SE whatever the block's activation
  bool from_exp = false;           // ratio of the expanded channels (MobileNetV3) or of the block input
  bool round_to_divisor = false;   // rd channels by round_channels (MobileNetV3) or Python's round
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
  SqueezeExciteImpl(int64_t chs, double ratio, Act block_act, const SEStyle& style);
  at::Tensor forward(const at::Tensor& x);

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
  void add_se(int64_t chs, const BlockOptions& o);
  at::Tensor se(const at::Tensor& x) { return se_ ? se_(x) : x; }
  at::Tensor finish(const at::Tensor& y, const at::Tensor& shortcut);
  Act act_;

 private:
  bool has_skip_;
  double drop_path_;
  SqueezeExcite se_{nullptr};
};

// Depthwise conv -> BN + act -> SE -> pointwise conv -> BN (no act: timm's 'ds', not 'dsa').
class DepthwiseSeparableConvImpl : public Block {
 public:
  explicit DepthwiseSeparableConvImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  nn::Conv2d conv_dw_{nullptr}, conv_pw_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
};
TORCH_MODULE(DepthwiseSeparableConv);

// MBConv: pointwise expansion -> depthwise conv -> SE -> pointwise linear projection.
class InvertedResidualImpl : public Block {
 public:
  explicit InvertedResidualImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  nn::Conv2d conv_pw_{nullptr}, conv_dw_{nullptr}, conv_pwl_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
};
TORCH_MODULE(InvertedResidual);

// Conv -> BN + act (MobileNetV3's last stage, 1x1 to 960 channels).
class ConvBnActImpl : public Block {
 public:
  explicit ConvBnActImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  nn::Conv2d conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
};
TORCH_MODULE(ConvBnAct);

}  // namespace trainrun::effnet
