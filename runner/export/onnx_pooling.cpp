// The aten -> ONNX conversions of pooling: max_pool and avg_pool (PyTorch's ceil_mode and
// count_include_pad written as ONNX's floor mode with extra end pads), adaptive_avg_pool.
#include "runner/export/onnx_ops.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trainrun::onnx_export {
namespace {

bool all_equal(const std::vector<int64_t>& values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

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

}  // namespace

void pooling_conversions(ConversionTable& t) {
  t.insert({
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

}  // namespace trainrun::onnx_export
