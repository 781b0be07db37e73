// timm's _efficientnet_blocks.py (efficientnet_blocks.h): the squeeze-excite, DepthwiseSeparableConv,
// InvertedResidual and ConvBnAct, each registering its modules in timm's order, and the layer
// helpers (activation, make_divisible, create_conv2d).
#include "components/models/efficientnet_blocks.h"

#include "components/models/timm_family.h"

#include <algorithm>
#include <cmath>

namespace trainrun::effnet {

at::Tensor activate(at::Tensor x, Act act) {
  switch (act) {
    case Act::ReLU: return x.relu_();
    case Act::SiLU: return torch::silu_(x);
    case Act::HardSwish: return torch::hardswish_(x);
  }
  return x;
}

int64_t make_divisible(double v, int64_t divisor) {
  int64_t rounded = std::max(divisor, int64_t(v + double(divisor) / 2) / divisor * divisor);
  return double(rounded) < 0.9 * v ? rounded + divisor : rounded;
}

int64_t python_round(double v) { return int64_t(std::nearbyint(v)); }

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(((stride - 1) + (kernel - 1)) / 2)
                        .groups(groups)
                        .bias(bias));
}

SqueezeExciteImpl::SqueezeExciteImpl(int64_t chs, double ratio, Act block_act, const SEStyle& style)
    : act_(style.force_act.value_or(block_act)), gate_(style.gate) {
  double rd = double(chs) * ratio;
  int64_t rd_chs = style.round_to_divisor ? make_divisible(rd) : python_round(rd);
  conv_reduce_ = register_module("conv_reduce", conv(chs, rd_chs, 1, 1, 1, /*bias=*/true));
  conv_expand_ = register_module("conv_expand", conv(rd_chs, chs, 1, 1, 1, /*bias=*/true));
}

at::Tensor SqueezeExciteImpl::forward(const at::Tensor& x) {
  at::Tensor s = activate(conv_reduce_(x.mean({2, 3}, /*keepdim=*/true)), act_);
  s = conv_expand_(s);
  return x * (gate_ == Gate::Sigmoid ? s.sigmoid() : torch::hardsigmoid(s));
}

void Block::add_se(int64_t chs, const BlockOptions& o) {
  if (o.se_ratio > 0) se_ = register_module("se", SqueezeExcite(chs, o.se_ratio, o.act, o.se));
}

at::Tensor Block::finish(const at::Tensor& y, const at::Tensor& shortcut) {
  return has_skip_ ? drop_path(y, drop_path_, is_training()) + shortcut : y;
}

DepthwiseSeparableConvImpl::DepthwiseSeparableConvImpl(const BlockOptions& o) : Block(o) {
  conv_dw_ = register_module("conv_dw", conv(o.in_chs, o.in_chs, o.kernel, o.stride, o.in_chs));
  bn1_ = register_module("bn1", nn::BatchNorm2d(o.in_chs));
  add_se(o.in_chs, o);
  conv_pw_ = register_module("conv_pw", conv(o.in_chs, o.out_chs, 1));
  bn2_ = register_module("bn2", nn::BatchNorm2d(o.out_chs));
}

at::Tensor DepthwiseSeparableConvImpl::forward(const at::Tensor& x) {
  at::Tensor y = se(activate(bn1_(conv_dw_(x)), act_));
  return finish(bn2_(conv_pw_(y)), x);
}

InvertedResidualImpl::InvertedResidualImpl(const BlockOptions& o) : Block(o) {
  int64_t mid = make_divisible(double(o.in_chs) * o.exp_ratio);
  conv_pw_ = register_module("conv_pw", conv(o.in_chs, mid, 1));
  bn1_ = register_module("bn1", nn::BatchNorm2d(mid));
  conv_dw_ = register_module("conv_dw", conv(mid, mid, o.kernel, o.stride, mid));
  bn2_ = register_module("bn2", nn::BatchNorm2d(mid));
  add_se(mid, o);
  conv_pwl_ = register_module("conv_pwl", conv(mid, o.out_chs, 1));
  bn3_ = register_module("bn3", nn::BatchNorm2d(o.out_chs));
}

at::Tensor InvertedResidualImpl::forward(const at::Tensor& x) {
  at::Tensor y = activate(bn1_(conv_pw_(x)), act_);
  y = se(activate(bn2_(conv_dw_(y)), act_));
  return finish(bn3_(conv_pwl_(y)), x);
}

ConvBnActImpl::ConvBnActImpl(const BlockOptions& o) : Block(o) {
  conv_ = register_module("conv", conv(o.in_chs, o.out_chs, o.kernel, o.stride));
  bn1_ = register_module("bn1", nn::BatchNorm2d(o.out_chs));
}

at::Tensor ConvBnActImpl::forward(const at::Tensor& x) { return finish(activate(bn1_(conv_(x)), act_), x); }

}  // namespace trainrun::effnet
