// The aten -> ONNX conversions of shapes: flatten, view / reshape (the traced batch kept free),
// permute / transpose, squeeze / unsqueeze, select / slice, cat, expand_as, and size / Int read at
// run time.
#include "runner/export/onnx_ops.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace trainrun::onnx_export {
namespace {

int64_t normalized_dim(const Converter& c, int64_t dim, std::size_t rank) {
  const auto r = int64_t(rank);
  if (dim < -r || dim >= std::max<int64_t>(r, 1)) c.fail("dim " + std::to_string(dim) + " out of range for rank " + std::to_string(r));
  return dim < 0 ? dim + r : dim;
}

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

}  // namespace

void shape_conversions(ConversionTable& t) {
  t.insert({
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
  });
}

}  // namespace trainrun::onnx_export
