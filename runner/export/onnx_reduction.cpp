// The aten -> ONNX conversions of reductions (mean: ReduceMean, whose axes became an input in
// opset 18) and softmax / log_softmax.
#include "runner/export/onnx_ops.h"

#include <string>
#include <vector>

namespace trainrun::onnx_export {
namespace {

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

}  // namespace

void reduction_conversions(ConversionTable& t) {
  t.insert({
      {"aten::mean", mean_op},
      {"aten::softmax", [](Converter& c, const Node& n) { softmax_op(c, n, "Softmax"); }},
      {"aten::log_softmax", [](Converter& c, const Node& n) { softmax_op(c, n, "LogSoftmax"); }},
  });
}

}  // namespace trainrun::onnx_export
