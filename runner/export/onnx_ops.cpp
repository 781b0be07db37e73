// The aten -> ONNX conversions (opset 17 and later), each matching PyTorch's semantics on the
// shapes the trace recorded: spatial sizes are static (the input's C, H, W are), the batch is not.
// What torch.onnx's symbolic functions do in Python, for the operators trainrun's models use.
#include "runner/export/onnx_graph.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainrun::onnx_export {

using torch::jit::Node;
using torch::jit::Value;

namespace {

// ---- shared helpers ----

void same_tensor(Converter& c, const Node& n) { c.bind(n.output(), c.tensor(n.input(0))); }

std::string onnx_unary(Converter& c, const std::string& op, const std::string& x) { return c.add(op, {x}).output(0); }

void unary_op(Converter& c, const Node& n, const std::string& op) {
  c.bind(n.output(), onnx_unary(c, op, c.tensor(n.input(0))));
}

int64_t normalized_dim(const Converter& c, int64_t dim, std::size_t rank) {
  const auto r = int64_t(rank);
  if (dim < -r || dim >= std::max<int64_t>(r, 1)) c.fail("dim " + std::to_string(dim) + " out of range for rank " + std::to_string(r));
  return dim < 0 ? dim + r : dim;
}

// A per-spatial-dimension list as PyTorch accepts it: one value for all, or one each.
std::vector<int64_t> per_dim(const Converter& c, std::vector<int64_t> values, std::size_t spatial, const std::string& what) {
  if (values.size() == 1 && spatial > 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) c.fail(what + " has " + std::to_string(values.size()) + " values for " + std::to_string(spatial) + " spatial dims");
  return values;
}

std::vector<int64_t> twice(const std::vector<int64_t>& pads) {
  std::vector<int64_t> out(pads);
  out.insert(out.end(), pads.begin(), pads.end());
  return out;
}

bool all_equal(const std::vector<int64_t>& values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

// ---- elementwise ----

// The other operand of a binary op: a tensor, or a number (a 0-d constant tensor too: Python's
// tracer records `x * 0.5` so) as a 0-d constant of the tensor's dtype, as PyTorch's type
// promotion keeps a tensor's dtype against a number of the same kind.
std::string binary_operand(Converter& c, const Value* v, at::ScalarType like) {
  const bool number = c.is_constant(v) && (!c.constant(v).isTensor() || c.constant(v).toTensor().dim() == 0);
  if (!number) {
    if (c.dtype(v) != like) c.fail(std::string("operands of dtypes ") + c10::toString(c.dtype(v)) + " and " + c10::toString(like));
    return c.tensor(v);
  }
  const double value = c.constant(v).isTensor() ? c.constant(v).toTensor().item<double>() : c.number(v);
  if (!at::isFloatingType(like) && value != std::floor(value)) c.fail("an integer tensor with a fractional number");
  return c.scalar(value, like);
}

// self OP (alpha * other), with `swap` other OP (alpha * self) (rsub).
void binary_op(Converter& c, const Node& n, const std::string& op, bool has_alpha, bool swap = false) {
  const Value* self = n.input(0);
  const at::ScalarType type = c.dtype(self);
  if (c.dtype(n.output()) != type)
    c.fail(std::string("a result of dtype ") + c10::toString(c.dtype(n.output())) + " from " + c10::toString(type));
  std::string a = c.tensor(self), b = binary_operand(c, n.input(1), type);
  if (swap) std::swap(a, b);
  if (has_alpha && n.inputs().size() > 2 && c.number(n.input(2)) != 1.0)
    b = c.add("Mul", {b, c.scalar(c.number(n.input(2)), type)}).output(0);
  c.bind(n.output(), c.add(op, {a, b}).output(0));
}

void div_op(Converter& c, const Node& n) {
  if (n.inputs().size() > 2 && !c.is_none(n.input(2))) c.fail("div with a rounding_mode");
  if (!at::isFloatingType(c.dtype(n.input(0)))) c.fail("div of an integer tensor (PyTorch divides exactly, ONNX truncates)");
  binary_op(c, n, "Div", false);
}

// x * 0.5 * (1 + erf(x / sqrt(2))), or with approximate='tanh' x * 0.5 * (1 + tanh(sqrt(2 / pi) *
// (x + 0.044715 x^3))): torch.nn.functional.gelu. Opset 20 has Gelu itself.
void gelu_op(Converter& c, const Node& n) {
  const std::string approximate = n.inputs().size() > 1 ? c.constant(n.input(1)).toStringRef() : "none";
  if (approximate != "none" && approximate != "tanh") c.fail("gelu approximate='" + approximate + "'");
  const std::string x = c.tensor(n.input(0));
  if (c.opset() >= 20) {
    auto& gelu = c.add("Gelu", {x});
    set_string(gelu, "approximate", approximate);
    c.bind(n.output(), gelu.output(0));
    return;
  }
  const at::ScalarType t = c.dtype(n.input(0));
  std::string inner;
  if (approximate == "none") {
    inner = c.add("Erf", {c.add("Div", {x, c.scalar(std::sqrt(2.0), t)}).output(0)}).output(0);
  } else {
    std::string cube = c.add("Mul", {x, c.add("Mul", {x, x}).output(0)}).output(0);
    std::string sum = c.add("Add", {x, c.add("Mul", {cube, c.scalar(0.044715, t)}).output(0)}).output(0);
    inner = c.add("Tanh", {c.add("Mul", {sum, c.scalar(std::sqrt(2.0 / M_PI), t)}).output(0)}).output(0);
  }
  std::string one_plus = c.add("Add", {inner, c.scalar(1.0, t)}).output(0);
  std::string half_x = c.add("Mul", {x, c.scalar(0.5, t)}).output(0);
  c.bind(n.output(), c.add("Mul", {half_x, one_plus}).output(0));
}

void silu_op(Converter& c, const Node& n) {
  const std::string x = c.tensor(n.input(0));
  c.bind(n.output(), c.add("Mul", {x, onnx_unary(c, "Sigmoid", x)}).output(0));
}

// relu6 / hardtanh(min, max): Clip.
void clip_op(Converter& c, const Node& n, double low, double high) {
  const at::ScalarType t = c.dtype(n.input(0));
  c.bind(n.output(), c.add("Clip", {c.tensor(n.input(0)), c.scalar(low, t), c.scalar(high, t)}).output(0));
}

void hardsigmoid_op(Converter& c, const Node& n) {  // relu6(x + 3) / 6
  auto& node = c.add("HardSigmoid", {c.tensor(n.input(0))});
  set_float(node, "alpha", 1.0 / 6.0);
  set_float(node, "beta", 0.5);
  c.bind(n.output(), node.output(0));
}

void leaky_relu_op(Converter& c, const Node& n) {
  auto& node = c.add("LeakyRelu", {c.tensor(n.input(0))});
  set_float(node, "alpha", n.inputs().size() > 1 ? c.number(n.input(1)) : 0.01);
  c.bind(n.output(), node.output(0));
}

void dropout_op(Converter& c, const Node& n) {
  if (c.boolean(n.input(2))) c.fail("dropout in training mode (the export traces the model in eval mode)");
  same_tensor(c, n);
}

// Any aten::to overload: the dtype is the one the trace recorded for the result.
void to_op(Converter& c, const Node& n) {
  const at::ScalarType from = c.dtype(n.input(0)), to = c.dtype(n.output());
  if (from == to) return same_tensor(c, n);
  auto& cast = c.add("Cast", {c.tensor(n.input(0))});
  set_int(cast, "to", onnx_dtype(to));
  c.bind(n.output(), cast.output(0));
}

// ---- convolution and normalisation ----

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

// ---- pooling ----

struct PoolWindow {
  std::vector<int64_t> kernel, stride, pad, dilation;
  bool ceil_mode = false;
};

PoolWindow pool_window(Converter& c, const Node& n, const Value* kernel, const Value* stride, const Value* pad,
                       const Value* dilation, const Value* ceil_mode) {
  PoolWindow w;
  w.kernel = c.ints(kernel);
  const std::size_t spatial = c.shape(n.input(0)).size() - 2;
  w.kernel = per_dim(c, w.kernel, spatial, "kernel_size");
  const std::vector<int64_t> s = c.ints(stride);
  w.stride = s.empty() ? w.kernel : per_dim(c, s, spatial, "stride");  // PyTorch: stride defaults to kernel_size
  w.pad = per_dim(c, c.ints(pad), spatial, "padding");
  w.dilation = dilation ? per_dim(c, c.ints(dilation), spatial, "dilation") : std::vector<int64_t>(spatial, 1);
  w.ceil_mode = c.boolean(ceil_mode);
  return w;
}

// How far past the input and its right padding the last window reaches, per spatial dim: PyTorch's
// ceil_mode keeps a last partial window unless it would start in the right padding
// (pooling_output_shape). ONNX's ceil_mode differs there, so the exporter writes floor mode with
// these extra end pads instead; the output sizes are checked against the trace's.
std::vector<int64_t> pool_overhang(Converter& c, const Node& n, const PoolWindow& w) {
  const std::vector<int64_t> in = c.shape(n.input(0)), out = c.shape(n.output());
  std::vector<int64_t> extra;
  for (std::size_t i = 0; i < w.kernel.size(); ++i) {
    const int64_t size = in[i + 2], span = w.dilation[i] * (w.kernel[i] - 1) + 1;
    const int64_t room = size + 2 * w.pad[i] - span;
    int64_t o = (w.ceil_mode ? (room + w.stride[i] - 1) / w.stride[i] : room / w.stride[i]) + 1;
    if (w.ceil_mode && (o - 1) * w.stride[i] >= size + w.pad[i]) --o;
    if (o != out[i + 2]) c.fail("pooled size " + std::to_string(o) + " where the trace has " + std::to_string(out[i + 2]));
    extra.push_back(std::max<int64_t>(0, (o - 1) * w.stride[i] + span - (size + 2 * w.pad[i])));
  }
  return extra;
}

std::vector<int64_t> padded_end(const std::vector<int64_t>& begin, const std::vector<int64_t>& extra) {
  std::vector<int64_t> pads(begin);
  for (std::size_t i = 0; i < begin.size(); ++i) pads.push_back(begin[i] + extra[i]);
  return pads;
}

// aten::max_pool1d/2d/3d: input, kernel_size, stride, padding, dilation, ceil_mode.
void max_pool_op(Converter& c, const Node& n) {
  const PoolWindow w = pool_window(c, n, n.input(1), n.input(2), n.input(3), n.input(4), n.input(5));
  auto& pool = c.add("MaxPool", {c.tensor(n.input(0))});
  set_ints(pool, "kernel_shape", w.kernel);
  set_ints(pool, "strides", w.stride);
  set_ints(pool, "pads", padded_end(w.pad, pool_overhang(c, n, w)));  // padding never wins a max
  set_ints(pool, "dilations", w.dilation);
  c.bind(n.output(), pool.output(0));
}

// aten::avg_pool1d/2d/3d: input, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override (2d/3d). PyTorch divides by the window's overlap with the padded input (with
// count_include_pad) or with the input (without); a ceil_mode window's part past the right padding
// never counts. With count_include_pad and such a window, the padding becomes a Pad node so that
// ONNX's count_include_pad=0 counts it and not the overhang.
void avg_pool_op(Converter& c, const Node& n) {
  const PoolWindow w = pool_window(c, n, n.input(1), n.input(2), n.input(3), nullptr, n.input(4));
  const bool count_pad = c.boolean(n.input(5));
  if (n.inputs().size() > 6 && !c.is_none(n.input(6))) c.fail("avg_pool with divisor_override");
  const std::vector<int64_t> extra = pool_overhang(c, n, w);
  std::string x = c.tensor(n.input(0));
  std::vector<int64_t> pads = padded_end(w.pad, extra);
  if (count_pad && !all_equal(extra, 0) && !all_equal(w.pad, 0)) {
    std::vector<int64_t> explicit_pads{0, 0};
    explicit_pads.insert(explicit_pads.end(), w.pad.begin(), w.pad.end());
    explicit_pads.insert(explicit_pads.end(), {0, 0});
    explicit_pads.insert(explicit_pads.end(), w.pad.begin(), w.pad.end());
    x = c.add("Pad", {x, c.int64s(explicit_pads)}).output(0);
    pads = padded_end(std::vector<int64_t>(w.pad.size(), 0), extra);
  }
  auto& pool = c.add("AveragePool", {x});
  set_ints(pool, "kernel_shape", w.kernel);
  set_ints(pool, "strides", w.stride);
  set_ints(pool, "pads", pads);
  set_int(pool, "count_include_pad", count_pad && all_equal(extra, 0) ? 1 : 0);
  c.bind(n.output(), pool.output(0));
}

// aten::adaptive_avg_pool1d/2d/3d: to 1 (GlobalAveragePool) or to a size that divides the input's
// (then the windows are equal and do not overlap: AveragePool); ONNX has no adaptive pooling.
void adaptive_avg_pool_op(Converter& c, const Node& n) {
  const std::vector<int64_t> in = c.shape(n.input(0));
  const std::vector<int64_t> out = per_dim(c, c.ints(n.input(1)), in.size() - 2, "output_size");
  const std::string x = c.tensor(n.input(0));
  if (all_equal(out, 1)) return c.bind(n.output(), onnx_unary(c, "GlobalAveragePool", x));
  std::vector<int64_t> kernel;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] <= 0 || in[i + 2] % out[i] != 0)
      c.fail("adaptive pooling from " + std::to_string(in[i + 2]) + " to " + std::to_string(out[i]) +
             " (ONNX has no adaptive pooling: only output sizes that divide the input's convert)");
    kernel.push_back(in[i + 2] / out[i]);
  }
  auto& pool = c.add("AveragePool", {x});
  set_ints(pool, "kernel_shape", kernel);
  set_ints(pool, "strides", kernel);
  c.bind(n.output(), pool.output(0));
}

// ---- reductions and softmax ----

// aten::mean: (input, dim, keepdim, dtype) or (input, dtype) over everything.
void mean_op(Converter& c, const Node& n) {
  const Value* dtype = n.inputs().back();
  if (!c.is_none(dtype) && c.dtype(n.output()) != c.dtype(n.input(0))) c.fail("mean with a dtype");
  std::vector<int64_t> axes;
  bool keep = false;
  if (n.inputs().size() > 2) {
    if (!c.is_none(n.input(1))) axes = c.ints(n.input(1));
    keep = c.boolean(n.input(2));
  }
  std::vector<std::string> inputs{c.tensor(n.input(0))};
  if (c.opset() >= 18 && !axes.empty()) inputs.push_back(c.int64s(axes));  // axes became an input in opset 18
  auto& mean = c.add("ReduceMean", inputs);
  if (c.opset() < 18 && !axes.empty()) set_ints(mean, "axes", axes);
  set_int(mean, "keepdims", keep ? 1 : 0);
  c.bind(n.output(), mean.output(0));
}

// aten::softmax / log_softmax: input, dim, dtype. ONNX's (opset 13+) normalises along one axis, as PyTorch.
void softmax_op(Converter& c, const Node& n, const std::string& op) {
  if (n.inputs().size() > 2 && !c.is_none(n.input(2)) && c.dtype(n.output()) != c.dtype(n.input(0)))
    c.fail(op + " with a dtype");
  auto& node = c.add(op, {c.tensor(n.input(0))});
  set_int(node, "axis", c.integer(n.input(1)));
  c.bind(n.output(), node.output(0));
}

// ---- shapes ----

// aten::flatten(input, start_dim, end_dim) as a Reshape that copies the dims before start_dim
// (the batch among them: it stays free) and names the static ones after end_dim.
void flatten_op(Converter& c, const Node& n) {
  const std::vector<int64_t> in = c.shape(n.input(0));
  const int64_t start = normalized_dim(c, c.integer(n.input(1)), in.size());
  const int64_t end = normalized_dim(c, c.integer(n.input(2)), in.size());
  if (in.empty()) return c.bind(n.output(), c.add("Reshape", {c.tensor(n.input(0)), c.int64s({1})}).output(0));
  if (start > end) c.fail("flatten with start_dim after end_dim");
  std::vector<int64_t> shape(std::size_t(start), 0);
  shape.push_back(-1);
  shape.insert(shape.end(), in.begin() + end + 1, in.end());
  c.bind(n.output(), c.add("Reshape", {c.tensor(n.input(0)), c.int64s(shape)}).output(0));
}

// aten::view / reshape(input, size). A constant size whose first entry is the traced input's
// first dim (x.view({x.size(0), -1}) in C++, where the tracer sees the number) copies that dim
// (ONNX's 0), so the batch stays free; a size read from the input at run time (Python's tracer
// records x.size(0)) is a 1-D tensor already.
void reshape_op(Converter& c, const Node& n) {
  const std::string x = c.tensor(n.input(0));
  if (!c.is_constant(n.input(1))) return c.bind(n.output(), c.add("Reshape", {x, c.tensor(n.input(1))}).output(0));
  std::vector<int64_t> shape = c.ints(n.input(1));
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) c.fail("a reshape to a size with a 0 (an empty tensor)");
  const std::vector<int64_t> in = c.shape(n.input(0));
  if (!shape.empty() && !in.empty() && shape[0] == in[0]) shape[0] = 0;
  c.bind(n.output(), c.add("Reshape", {x, c.int64s(shape)}).output(0));
}

void transpose_to(Converter& c, const Node& n, std::vector<int64_t> perm) {
  for (auto& d : perm) d = normalized_dim(c, d, perm.size());
  auto& node = c.add("Transpose", {c.tensor(n.input(0))});
  set_ints(node, "perm", perm);
  c.bind(n.output(), node.output(0));
}

void permute_op(Converter& c, const Node& n) { transpose_to(c, n, c.ints(n.input(1))); }

void transpose_op(Converter& c, const Node& n) {
  const std::size_t rank = c.shape(n.input(0)).size();
  std::vector<int64_t> perm(rank);
  for (std::size_t i = 0; i < rank; ++i) perm[i] = int64_t(i);
  std::swap(perm.at(normalized_dim(c, c.integer(n.input(1)), rank)), perm.at(normalized_dim(c, c.integer(n.input(2)), rank)));
  transpose_to(c, n, perm);
}

void t_op(Converter& c, const Node& n) {
  if (c.shape(n.input(0)).size() < 2) return same_tensor(c, n);
  transpose_to(c, n, {1, 0});
}

void unsqueeze_op(Converter& c, const Node& n) {
  const int64_t dim = normalized_dim(c, c.integer(n.input(1)), c.shape(n.input(0)).size() + 1);
  c.bind(n.output(), c.add("Unsqueeze", {c.tensor(n.input(0)), c.int64s({dim})}).output(0));
}

// aten::squeeze(input, dim): a no-op where that dim is not 1, as in PyTorch.
void squeeze_op(Converter& c, const Node& n) {
  if (n.inputs().size() < 2) c.fail("squeeze without a dim (the traced batch of 1 would be squeezed too)");
  const std::vector<int64_t> in = c.shape(n.input(0));
  const int64_t dim = normalized_dim(c, c.integer(n.input(1)), in.size());
  if (in.empty() || in[dim] != 1) return same_tensor(c, n);
  c.bind(n.output(), c.add("Squeeze", {c.tensor(n.input(0)), c.int64s({dim})}).output(0));
}

// aten::select(input, dim, index): x[:, i].
void select_op(Converter& c, const Node& n) {
  const std::vector<int64_t> in = c.shape(n.input(0));
  auto& gather = c.add("Gather", {c.tensor(n.input(0)), c.constant_tensor(at::scalar_tensor(c.integer(n.input(2)), at::kLong))});
  set_int(gather, "axis", normalized_dim(c, c.integer(n.input(1)), in.size()));
  c.bind(n.output(), gather.output(0));
}

// aten::slice(input, dim, start, end, step): x[:, a:b:s]; None ends are the tensor's.
void slice_op(Converter& c, const Node& n) {
  const int64_t dim = normalized_dim(c, c.integer(n.input(1)), c.shape(n.input(0)).size());
  const int64_t start = c.is_none(n.input(2)) ? 0 : c.integer(n.input(2));
  const int64_t end = c.is_none(n.input(3)) ? std::numeric_limits<int64_t>::max() : c.integer(n.input(3));
  c.bind(n.output(), c.add("Slice", {c.tensor(n.input(0)), c.int64s({start}), c.int64s({end}), c.int64s({dim}),
                                     c.int64s({c.integer(n.input(4))})})
                         .output(0));
}

// aten::expand_as(input, other): Expand to `other`'s shape read at run time, so a batch taken from
// the traced input stays free (a ViT's cls_token.expand_as(x.slice(1, 0, 1))).
void expand_as_op(Converter& c, const Node& n) {
  const std::string shape = onnx_unary(c, "Shape", c.tensor(n.input(1)));
  c.bind(n.output(), c.add("Expand", {c.tensor(n.input(0)), shape}).output(0));
}

void cat_op(Converter& c, const Node& n) {
  auto& concat = c.add("Concat", c.tensors(n.input(0)));
  set_int(concat, "axis", normalized_dim(c, c.integer(n.input(1)), c.shape(n.output()).size()));
  c.bind(n.output(), concat.output(0));
}

// aten::size(input, dim) as Python's tracer records x.size(0): a 1-D int64 [1] computed at run time.
void size_op(Converter& c, const Node& n) {
  const std::string shape = onnx_unary(c, "Shape", c.tensor(n.input(0)));
  if (n.inputs().size() < 2) return c.bind(n.output(), shape);
  const int64_t dim = normalized_dim(c, c.integer(n.input(1)), c.shape(n.input(0)).size());
  auto& gather = c.add("Gather", {shape, c.int64s({dim})});
  set_int(gather, "axis", 0);
  c.bind(n.output(), gather.output(0));
}

// aten::Int / ScalarImplicit: a size back to an int: the same ONNX value (or the same constant).
void int_op(Converter& c, const Node& n) {
  if (c.is_constant(n.input(0)) && c.constant(n.input(0)).isTensor())
    return c.bind_constant(n.output(), c.constant(n.input(0)).toTensor().item());
  same_tensor(c, n);
}

// ---- linear algebra ----

// aten::linear(input, weight, bias): Gemm for a 2-D input, MatMul by the transposed weight above.
void linear_op(Converter& c, const Node& n) {
  const std::string x = c.tensor(n.input(0)), w = c.tensor(n.input(1));
  const bool bias = !c.is_none(n.input(2));
  if (c.shape(n.input(0)).size() == 2) {
    std::vector<std::string> inputs{x, w};
    if (bias) inputs.push_back(c.tensor(n.input(2)));
    auto& gemm = c.add("Gemm", inputs);
    set_int(gemm, "transB", 1);
    return c.bind(n.output(), gemm.output(0));
  }
  auto& wt = c.add("Transpose", {w});
  set_ints(wt, "perm", {1, 0});
  std::string y = c.add("MatMul", {x, wt.output(0)}).output(0);
  if (bias) y = c.add("Add", {y, c.tensor(n.input(2))}).output(0);
  c.bind(n.output(), y);
}

// aten::addmm(bias, mat1, mat2, beta, alpha) = beta * bias + alpha * mat1 @ mat2: Gemm. The
// tracer records nn::Linear on a 2-D input as addmm(bias, x, weight.t()): Gemm takes the weight
// itself (transB), and the Transpose aten::t made goes unused (write_onnx drops it).
void addmm_op(Converter& c, const Node& n) {
  const Node* mat2 = n.input(2)->node();
  const bool transposed = mat2->kind() == c10::Symbol::fromQualString("aten::t") && c.shape(mat2->input(0)).size() == 2;
  auto& gemm = c.add("Gemm", {c.tensor(n.input(1)), c.tensor(transposed ? mat2->input(0) : n.input(2)), c.tensor(n.input(0))});
  if (transposed) set_int(gemm, "transB", 1);
  set_float(gemm, "beta", n.inputs().size() > 3 ? c.number(n.input(3)) : 1.0);
  set_float(gemm, "alpha", n.inputs().size() > 4 ? c.number(n.input(4)) : 1.0);
  c.bind(n.output(), gemm.output(0));
}

void matmul_op(Converter& c, const Node& n) {
  c.bind(n.output(), c.add("MatMul", {c.tensor(n.input(0)), c.tensor(n.input(1))}).output(0));
}

// The table, in three parts (one function each).
using ConversionTable = std::map<std::string, OpConversion>;

// Convolution, normalisation, activations, pooling
void layer_conversions(ConversionTable& t) {
  t.insert({
      // convolution, normalisation
      {"aten::_convolution", convolution_op},
      {"aten::_convolution_mode", convolution_mode_op},
      {"aten::batch_norm", batch_norm_op},
      {"aten::layer_norm", layer_norm_op},
      // activations
      {"aten::relu", [](Converter& c, const Node& n) { unary_op(c, n, "Relu"); }},
      {"aten::relu_", [](Converter& c, const Node& n) { unary_op(c, n, "Relu"); }},
      {"aten::sigmoid", [](Converter& c, const Node& n) { unary_op(c, n, "Sigmoid"); }},
      {"aten::sigmoid_", [](Converter& c, const Node& n) { unary_op(c, n, "Sigmoid"); }},
      {"aten::tanh", [](Converter& c, const Node& n) { unary_op(c, n, "Tanh"); }},
      {"aten::tanh_", [](Converter& c, const Node& n) { unary_op(c, n, "Tanh"); }},
      {"aten::hardswish", [](Converter& c, const Node& n) { unary_op(c, n, "HardSwish"); }},
      {"aten::hardswish_", [](Converter& c, const Node& n) { unary_op(c, n, "HardSwish"); }},
      {"aten::hardsigmoid", hardsigmoid_op},
      {"aten::hardsigmoid_", hardsigmoid_op},
      {"aten::relu6", [](Converter& c, const Node& n) { clip_op(c, n, 0.0, 6.0); }},
      {"aten::relu6_", [](Converter& c, const Node& n) { clip_op(c, n, 0.0, 6.0); }},
      {"aten::hardtanh", [](Converter& c, const Node& n) { clip_op(c, n, c.number(n.input(1)), c.number(n.input(2))); }},
      {"aten::hardtanh_", [](Converter& c, const Node& n) { clip_op(c, n, c.number(n.input(1)), c.number(n.input(2))); }},
      {"aten::leaky_relu", leaky_relu_op},
      {"aten::leaky_relu_", leaky_relu_op},
      {"aten::gelu", gelu_op},
      {"aten::silu", silu_op},
      {"aten::silu_", silu_op},
      // pooling
      {"aten::max_pool1d", max_pool_op},
      {"aten::max_pool2d", max_pool_op},
      {"aten::max_pool3d", max_pool_op},
      {"aten::avg_pool1d", avg_pool_op},
      {"aten::avg_pool2d", avg_pool_op},
      {"aten::avg_pool3d", avg_pool_op},
      {"aten::adaptive_avg_pool1d", adaptive_avg_pool_op},
      {"aten::adaptive_avg_pool2d", adaptive_avg_pool_op},
      {"aten::adaptive_avg_pool3d", adaptive_avg_pool_op},
  });
}

// Reductions, softmax, shapes, linear algebra
void tensor_conversions(ConversionTable& t) {
  t.insert({
      // reductions, softmax
      {"aten::mean", mean_op},
      {"aten::softmax", [](Converter& c, const Node& n) { softmax_op(c, n, "Softmax"); }},
      {"aten::log_softmax", [](Converter& c, const Node& n) { softmax_op(c, n, "LogSoftmax"); }},
      // shapes
      {"aten::flatten", flatten_op},
      {"aten::view", reshape_op},
      {"aten::reshape", reshape_op},
      {"aten::permute", permute_op},
      {"aten::transpose", transpose_op},
      {"aten::t", t_op},
      {"aten::unsqueeze", unsqueeze_op},
      {"aten::squeeze", squeeze_op},
      {"aten::select", select_op},
      {"aten::slice", slice_op},
      {"aten::cat", cat_op},
      {"aten::expand_as", expand_as_op},
      {"aten::size", size_op},
      {"aten::Int", int_op},
      {"aten::ScalarImplicit", int_op},
      // linear algebra
      {"aten::linear", linear_op},
      {"aten::addmm", addmm_op},
      {"aten::matmul", matmul_op},
      {"aten::mm", matmul_op},
  });
}

// Arithmetic, and what is the same value in eval mode
void arithmetic_conversions(ConversionTable& t) {
  t.insert({
      // arithmetic (tensor or number; add/sub with alpha)
      {"aten::add", [](Converter& c, const Node& n) { binary_op(c, n, "Add", true); }},
      {"aten::add_", [](Converter& c, const Node& n) { binary_op(c, n, "Add", true); }},
      {"aten::sub", [](Converter& c, const Node& n) { binary_op(c, n, "Sub", true); }},
      {"aten::sub_", [](Converter& c, const Node& n) { binary_op(c, n, "Sub", true); }},
      {"aten::rsub", [](Converter& c, const Node& n) { binary_op(c, n, "Sub", true, /*swap=*/true); }},
      {"aten::mul", [](Converter& c, const Node& n) { binary_op(c, n, "Mul", false); }},
      {"aten::mul_", [](Converter& c, const Node& n) { binary_op(c, n, "Mul", false); }},
      {"aten::div", div_op},
      {"aten::div_", div_op},
      // the same values in eval mode: dropout, memory layout, autograd, dtype conversions
      {"aten::dropout", dropout_op},
      {"aten::dropout_", dropout_op},
      {"aten::feature_dropout", dropout_op},
      {"aten::alpha_dropout", dropout_op},
      {"aten::feature_alpha_dropout", dropout_op},
      {"aten::contiguous", same_tensor},
      {"aten::clone", same_tensor},
      {"aten::detach", same_tensor},
      {"aten::detach_", same_tensor},
      {"aten::to", to_op},
      {"aten::type_as", to_op},
  });
}

}  // namespace

const std::map<std::string, OpConversion>& op_conversions() {
  static const ConversionTable table = [] {
    ConversionTable t;
    layer_conversions(t);
    tensor_conversions(t);
    arithmetic_conversions(t);
    return t;
  }();
  return table;
}

}  // namespace trainrun::onnx_export
