// The aten -> ONNX conversions of convolutions (aten::_convolution, _convolution_mode: Conv and
// ConvTranspose, PyTorch's padding='same' / 'valid') and normalisations (batch_norm, layer_norm).
#include "runner/export/onnx_ops.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace trainrun::onnx_export {
namespace {

std::vector<int64_t> twice(const std::vector<int64_t>& pads) {
  std::vector<int64_t> out(pads);
  out.insert(out.end(), pads.begin(), pads.end());
  return out;
}

struct ConvArgs {
  const Value *input, *weight, *bias, *stride, *padding, *dilation, *output_padding = nullptr, *groups;
  bool transposed = false;
};

// PyTorch's padding='same' (stride 1): d * (k - 1) in all, the odd one at the end; 'valid': none.
std::vector<int64_t> conv_pads(Converter& c, const ConvArgs& a, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& dilation) {
  const std::size_t spatial = kernel.size();
  const c10::IValue& padding = c.constant(a.padding);
  if (!padding.isString()) return twice(per_dim(c, c.ints(a.padding), spatial, "padding"));
  std::vector<int64_t> pads(2 * spatial, 0);
  if (padding.toStringRef() == "valid") return pads;
  if (padding.toStringRef() != "same") c.fail("padding='" + padding.toStringRef() + "'");
  for (std::size_t i = 0; i < spatial; ++i) {
    const int64_t total = dilation[i] * (kernel[i] - 1);
    pads[i] = total / 2;
    pads[i + spatial] = total - total / 2;
  }
  return pads;
}

void emit_conv(Converter& c, const Node& n, const ConvArgs& a) {
  const std::vector<int64_t> weight = c.shape(a.weight);
  if (weight.size() < 3) c.fail("a convolution weight of rank " + std::to_string(weight.size()));
  const std::size_t spatial = weight.size() - 2;
  const std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  const std::vector<int64_t> dilation = per_dim(c, c.ints(a.dilation), spatial, "dilation");
  std::vector<std::string> inputs{c.tensor(a.input), c.tensor(a.weight)};
  if (!c.is_none(a.bias)) inputs.push_back(c.tensor(a.bias));
  auto& conv = c.add(a.transposed ? "ConvTranspose" : "Conv", inputs);
  set_ints(conv, "kernel_shape", kernel);
  set_ints(conv, "strides", per_dim(c, c.ints(a.stride), spatial, "stride"));
  set_ints(conv, "pads", conv_pads(c, a, kernel, dilation));
  set_ints(conv, "dilations", dilation);
  set_int(conv, "group", c.integer(a.groups));
  if (a.transposed && a.output_padding)
    set_ints(conv, "output_padding", per_dim(c, c.ints(a.output_padding), spatial, "output_padding"));
  c.bind(n.output(), conv.output(0));
}

// aten::_convolution, what the tracer records for every convolution and transposed convolution
// (conv2d, conv_transpose2d, ... are never recorded: DONT_RECORD_TRACE in PyTorch's
// gen_trace_type.py): input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups, benchmark, deterministic, cudnn_enabled, allow_tf32.
void convolution_op(Converter& c, const Node& n) {
  ConvArgs a{n.input(0), n.input(1), n.input(2), n.input(3), n.input(4), n.input(5), n.input(7), n.input(8)};
  a.transposed = c.boolean(n.input(6));
  emit_conv(c, n, a);
}

// aten::_convolution_mode, what conv with padding='same' or 'valid' records: input, weight, bias,
// stride, padding (the string), dilation, groups.
void convolution_mode_op(Converter& c, const Node& n) {
  emit_conv(c, n, ConvArgs{n.input(0), n.input(1), n.input(2), n.input(3), n.input(4), n.input(5), nullptr, n.input(6)});
}

// A scale or shift that PyTorch allows to be None (affine=False): ones or zeros.
std::string affine_or(Converter& c, const Value* v, const std::vector<int64_t>& shape, double fill, at::ScalarType t) {
  if (!c.is_none(v)) return c.tensor(v);
  return c.constant_tensor(at::full(shape, fill, at::TensorOptions().dtype(t)));
}

// aten::batch_norm: input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn.
void batch_norm_op(Converter& c, const Node& n) {
  if (c.boolean(n.input(5))) c.fail("batch_norm in training mode (the export traces the model in eval mode)");
  if (c.is_none(n.input(3)) || c.is_none(n.input(4)))
    c.fail("batch_norm without running statistics (track_running_stats=False normalises by the batch's own)");
  const std::vector<int64_t> channels = c.shape(n.input(3));
  const at::ScalarType t = c.dtype(n.input(0));
  auto& bn = c.add("BatchNormalization", {c.tensor(n.input(0)), affine_or(c, n.input(1), channels, 1.0, t),
                                          affine_or(c, n.input(2), channels, 0.0, t), c.tensor(n.input(3)),
                                          c.tensor(n.input(4))});
  set_float(bn, "epsilon", c.number(n.input(7)));
  c.bind(n.output(), bn.output(0));
}

// aten::layer_norm: input, normalized_shape, weight, bias, eps, cudnn_enable.
void layer_norm_op(Converter& c, const Node& n) {
  const std::vector<int64_t> normalized = c.ints(n.input(1));
  const at::ScalarType t = c.dtype(n.input(0));
  std::vector<std::string> inputs{c.tensor(n.input(0)), affine_or(c, n.input(2), normalized, 1.0, t)};
  if (!c.is_none(n.input(3))) inputs.push_back(c.tensor(n.input(3)));
  auto& ln = c.add("LayerNormalization", inputs);
  set_int(ln, "axis", -int64_t(normalized.size()));
  set_float(ln, "epsilon", c.number(n.input(4)));
  c.bind(n.output(), ln.output(0));
}

}  // namespace

void conv_norm_conversions(ConversionTable& t) {
  t.insert({
      {"aten::_convolution", convolution_op},
      {"aten::_convolution_mode", convolution_mode_op},
      {"aten::batch_norm", batch_norm_op},
      {"aten::layer_norm", layer_norm_op},
  });
}

}  // namespace trainrun::onnx_export
