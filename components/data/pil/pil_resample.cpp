// Image.resize, ported from Pillow's src/libImaging/Resample.c: two separable passes with 22-bit
// fixed-point coefficients, bilinear and bicubic (a = -0.5), both antialiased when shrinking;
// NEAREST is an affine scale (pil_affine.cpp).
#include "components/data/pil/pil_common.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainrun::pil {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic_filter(double x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct Coefficients {
  int ksize = 0;
  std::vector<int> bounds;  // xmin, count per output pixel
  std::vector<int32_t> kk;  // ksize per output pixel, fixed point
};

// precompute_coeffs + normalize_coeffs_8bpc for in_size -> out_size over the box [in0, in1).
Coefficients precompute(int in_size, float in0, float in1, int out_size, Filter filter) {
  double (*fn)(double) = filter == Filter::bicubic ? bicubic_filter : bilinear_filter;
  const double support0 = filter == Filter::bicubic ? 2.0 : 1.0;
  double scale = double(in1 - in0) / out_size, filterscale = scale < 1.0 ? 1.0 : scale;
  double support = support0 * filterscale;
  Coefficients c;
  c.ksize = int(std::ceil(support)) * 2 + 1;
  c.bounds.resize(size_t(out_size) * 2);
  c.kk.assign(size_t(out_size) * size_t(c.ksize), 0);
  std::vector<double> k(size_t(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    double center = in0 + (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
    int xmin = std::max(0, int(center - support + 0.5));
    int xmax = std::min(in_size, int(center + support + 0.5)) - xmin;
    std::fill(k.begin(), k.end(), 0.0);
    for (int x = 0; x < xmax; ++x) ww += (k[size_t(x)] = fn((x + xmin - center + 0.5) * ss));
    for (int x = 0; x < xmax; ++x)
      if (ww != 0.0) k[size_t(x)] /= ww;
    for (int x = 0; x < c.ksize; ++x) {
      double v = k[size_t(x)];
      c.kk[size_t(xx) * size_t(c.ksize) + size_t(x)] =
          int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[size_t(xx) * 2] = xmin;
    c.bounds[size_t(xx) * 2 + 1] = xmax;
  }
  return c;
}

uint8_t clip_fixed(int32_t v) { return clip8(v >> kPrecisionBits); }

// One pass along `axis` (1 = horizontal, 0 = vertical) of rows [first, first + out_rows) of `in`.
at::Tensor resample_pass(const at::Tensor& in, const Coefficients& c, int axis, int64_t first, int64_t out_rows,
                         int64_t out_cols) {
  const int64_t ch = in.size(2), in_w = in.size(1);
  at::Tensor out = at::empty({out_rows, out_cols, ch}, at::kByte);
  const uint8_t* src = in.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  for (int64_t yy = 0; yy < out_rows; ++yy)
    for (int64_t xx = 0; xx < out_cols; ++xx) {
      const int64_t o = axis == 1 ? xx : yy;
      const int xmin = c.bounds[size_t(o) * 2], n = c.bounds[size_t(o) * 2 + 1];
      const int32_t* k = &c.kk[size_t(o) * size_t(c.ksize)];
      for (int64_t b = 0; b < ch; ++b) {
        int32_t ss = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < n; ++x) {
          const int64_t at = axis == 1 ? ((yy + first) * in_w + xmin + x) : ((xmin + x) * in_w + xx);
          ss += int32_t(src[at * ch + b]) * k[x];
        }
        dst[(yy * out_cols + xx) * ch + b] = clip_fixed(ss);
      }
    }
  return out;
}

}  // namespace

Filter filter_named(const std::string& name) {
  if (name == "nearest") return Filter::nearest;
  if (name == "bilinear") return Filter::bilinear;
  if (name == "bicubic") return Filter::bicubic;
  throw std::invalid_argument("interpolation: expected nearest, bilinear or bicubic, got '" + name + "'");
}

at::Tensor resize(const at::Tensor& image, int64_t height, int64_t width, Filter filter) {
  at::Tensor in = contiguous_image(image);
  const int64_t h = in.size(0), w = in.size(1);
  if (height == h && width == w) return in.clone();
  if (filter == Filter::nearest)
    return affine_nearest(in, height, width, {double(float(w)) / double(width), 0, 0, 0, double(float(h)) / double(height), 0}, {});
  Coefficients horiz = precompute(int(w), 0.0f, float(w), int(width), filter);
  Coefficients vert = precompute(int(h), 0.0f, float(h), int(height), filter);
  const int first = vert.bounds[0];
  const int last = vert.bounds[size_t(height) * 2 - 2] + vert.bounds[size_t(height) * 2 - 1];
  at::Tensor cur = in;
  if (width != w) {
    for (int64_t i = 0; i < height; ++i) vert.bounds[size_t(i) * 2] -= first;
    cur = resample_pass(in, horiz, 1, first, last - first, width);
  }
  if (height != h) cur = resample_pass(cur, vert, 0, 0, height, width);
  return cur;
}

}  // namespace trainrun::pil
