// The aten -> ONNX conversions of linear algebra: linear and addmm (Gemm, the weight taken
// transposed), matmul / mm.
#include "runner/export/onnx_ops.h"

#include <string>
#include <vector>

namespace trainrun::onnx_export {
namespace {

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

}  // namespace

void linalg_conversions(ConversionTable& t) {
  t.insert({
      {"aten::linear", linear_op},
      {"aten::addmm", addmm_op},
      {"aten::matmul", matmul_op},
      {"aten::mm", matmul_op},
  });
}

}  // namespace trainrun::onnx_export
