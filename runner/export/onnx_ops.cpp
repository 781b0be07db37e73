// The aten -> ONNX conversions (opset 17 and later), each matching PyTorch's semantics on the
// shapes the trace recorded: spatial sizes are static (the input's C, H, W are), the batch is not.
// What torch.onnx's symbolic functions do in Python, for the operators trainrun's models use.
// The conversions themselves are in one file per family of operators (onnx_ops.h lists them);
// here are the helpers they share and the table they make up.
#include "runner/export/onnx_ops.h"

namespace trainrun::onnx_export {

void same_tensor(Converter& c, const Node& n) { c.bind(n.output(), c.tensor(n.input(0))); }

std::string onnx_unary(Converter& c, const std::string& op, const std::string& x) { return c.add(op, {x}).output(0); }

std::vector<int64_t> per_dim(const Converter& c, std::vector<int64_t> values, std::size_t spatial, const std::string& what) {
  if (values.size() == 1 && spatial > 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) c.fail(what + " has " + std::to_string(values.size()) + " values for " + std::to_string(spatial) + " spatial dims");
  return values;
}

const std::map<std::string, OpConversion>& op_conversions() {
  static const ConversionTable table = [] {
    ConversionTable t;
    conv_norm_conversions(t);
    elementwise_conversions(t);
    pooling_conversions(t);
    reduction_conversions(t);
    shape_conversions(t);
    linalg_conversions(t);
    return t;
  }();
  return table;
}

}  // namespace trainrun::onnx_export
