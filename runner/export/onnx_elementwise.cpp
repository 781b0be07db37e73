// The elementwise aten -> ONNX conversions: activations, arithmetic with a tensor or a number
// (PyTorch's type promotion against a number), and what is the same value in eval mode (dropout,
// memory layout, autograd, dtype conversions).
#include "runner/export/onnx_ops.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace trainrun::onnx_export {
namespace {

void unary_op(Converter& c, const Node& n, const std::string& op) {
  c.bind(n.output(), onnx_unary(c, op, c.tensor(n.input(0))));
}

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

}  // namespace

void elementwise_conversions(ConversionTable& t) {
  t.insert({
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

}  // namespace trainrun::onnx_export
