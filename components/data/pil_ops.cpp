// Ports of Pillow's resampling, affine transform, enhancers, HSV conversion and ImageOps lookup
// tables (src/libImaging/{Resample,Geometry,Blend,Filter,Convert}.c, PIL/ImageEnhance.py,
// PIL/ImageOps.py and PIL/Image.py's rotate, at tags 9.4.0 and 11.1.0, whose code for these is the
// same). The arithmetic keeps Pillow's types (float where Pillow computes in float, double where
// in double, 22-bit fixed point in the resampler, 16.16 in the affine transform) so the results
// are Pillow's bit for bit; the project builds with -ffp-contract=off so no multiply-add is fused.
#include "components/data/pil_ops.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace trainrun::pil {
namespace {

constexpr double kPi = 3.14159265358979323846;  // CPython's Py_MATH_PI
double radians(double degrees) { return degrees * (kPi / 180.0); }

at::Tensor contiguous_image(const at::Tensor& image) {
  if (image.scalar_type() != at::kByte || image.dim() != 3 || (image.size(2) != 1 && image.size(2) != 3))
    throw std::invalid_argument("expected a uint8 H x W x C image with 1 or 3 channels (put image transforms before to_tensor)");
  return image.contiguous();
}

uint8_t clip8(int v) { return uint8_t(std::clamp(v, 0, 255)); }

// --- Resample.c ---------------------------------------------------------------------------------

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

// ImagingScaleAffine, ImagingTransformAffine's fixed-point and floating-point paths (NEAREST).
int coord(double v) { return v < 0.0 ? -1 : int(v); }
int64_t fix16(double v) {
  double t = v * 65536.0 + 0.5;
  return t < 0.0 ? int64_t(std::floor(t)) : int64_t(t);
}

at::Tensor filled(int64_t h, int64_t w, int64_t ch, const std::vector<double>& fill) {
  at::Tensor out = at::empty({h, w, ch}, at::kByte);
  uint8_t value[3] = {0, 0, 0};
  for (int64_t b = 0; b < ch; ++b)
    value[b] = fill.empty() ? 0 : clip8(int(fill.size() == 1 ? fill[0] : fill.at(size_t(b))));
  uint8_t* p = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < h * w; ++i)
    for (int64_t b = 0; b < ch; ++b) p[i * ch + b] = value[b];
  return out;
}

at::Tensor affine_nearest(const at::Tensor& in, int64_t out_h, int64_t out_w, const std::array<double, 6>& a,
                          const std::vector<double>& fill) {
  const int64_t ch = in.size(2), xsize = in.size(1), ysize = in.size(0);
  at::Tensor out = filled(out_h, out_w, ch, fill);
  const uint8_t* src = in.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  auto copy = [&](int64_t y, int64_t x, int64_t yin, int64_t xin) {
    for (int64_t b = 0; b < ch; ++b) dst[(y * out_w + x) * ch + b] = src[(yin * xsize + xin) * ch + b];
  };
  if (a[1] == 0 && a[3] == 0) {  // ImagingScaleAffine
    std::vector<int64_t> xintab(size_t(out_w), 0);
    double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
    int64_t xmin = out_w, xmax = 0;
    for (int64_t x = 0; x < out_w; ++x, xo += a[0]) {
      int xin = coord(xo);
      if (xin >= 0 && xin < xsize) {
        xmax = x + 1;
        xmin = std::min(xmin, x);
        xintab[size_t(x)] = xin;
      }
    }
    for (int64_t y = 0; y < out_h; ++y, yo += a[4]) {
      int yi = coord(yo);
      if (yi >= 0 && yi < ysize)
        for (int64_t x = xmin; x < xmax; ++x) copy(y, x, yi, xintab[size_t(x)]);
    }
    return out;
  }
  auto fits = [&](double x, double y) {
    return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
  };
  if (fits(0, 0) && fits(double(out_w), double(out_h)) && fits(0, double(out_h)) && fits(double(out_w), 0)) {
    const int64_t a0 = fix16(a[0]), a1 = fix16(a[1]), a3 = fix16(a[3]), a4 = fix16(a[4]);
    int64_t a2 = fix16(a[2] + a[0] * 0.5 + a[1] * 0.5), a5 = fix16(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int64_t y = 0; y < out_h; ++y, a2 += a1, a5 += a4) {
      int64_t xx = a2, yy = a5;
      for (int64_t x = 0; x < out_w; ++x, xx += a0, yy += a3) {
        int64_t xin = xx >> 16, yin = yy >> 16;
        if (xin >= 0 && xin < xsize && yin >= 0 && yin < ysize) copy(y, x, yin, xin);
      }
    }
    return out;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int64_t y = 0; y < out_h; ++y, xo += a[1], yo += a[4]) {
    double xx = xo, yy = yo;
    for (int64_t x = 0; x < out_w; ++x, xx += a[0], yy += a[3]) {
      int xin = coord(xx), yin = coord(yy);
      if (xin >= 0 && xin < xsize && yin >= 0 && yin < ysize) copy(y, x, yin, xin);
    }
  }
  return out;
}

// --- Blend.c, Filter.c, ImageEnhance.py ----------------------------------------------------------

// Image.blend(degenerate, image, factor): alpha is a C float, the sum is float, then truncated.
at::Tensor blend(const at::Tensor& degenerate, const at::Tensor& image, double factor) {
  const float alpha = float(factor);
  if (alpha == 0.0f) return degenerate.clone();
  if (alpha == 1.0f) return image.clone();
  at::Tensor out = at::empty_like(image);
  const uint8_t *in1 = degenerate.data_ptr<uint8_t>(), *in2 = image.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  const int64_t n = image.numel();
  const bool inside = alpha >= 0 && alpha <= 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    float t = float(int(in1[i])) + alpha * float(int(in2[i]) - int(in1[i]));
    o[i] = inside ? uint8_t(t) : t <= 0.0f ? 0 : t >= 255.0f ? 255 : uint8_t(t);
  }
  return out;
}

// ImageFilter.SMOOTH through ImagingFilter3x3: kernel (1 1 1 / 1 5 1 / 1 1 1) / 13 in float, the
// border rows and columns copied.
at::Tensor smooth(const at::Tensor& image) {
  const int64_t h = image.size(0), w = image.size(1), ch = image.size(2);
  at::Tensor out = image.clone();
  if (h < 3 || w < 3) return out;
  const float k[9] = {1.0f / 13.0f, 1.0f / 13.0f, 1.0f / 13.0f, 1.0f / 13.0f, 5.0f / 13.0f,
                      1.0f / 13.0f, 1.0f / 13.0f, 1.0f / 13.0f, 1.0f / 13.0f};
  const uint8_t* in = image.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  auto px = [&](int64_t y, int64_t x, int64_t b) { return float(in[(y * w + x) * ch + b]); };
  auto row = [&](int64_t y, int64_t x, int64_t b, const float* kr) {
    return px(y, x - 1, b) * kr[0] + px(y, x, b) * kr[1] + px(y, x + 1, b) * kr[2];
  };
  for (int64_t y = 1; y < h - 1; ++y)
    for (int64_t x = 1; x < w - 1; ++x)
      for (int64_t b = 0; b < ch; ++b) {
        float ss = 0.5f;
        ss += row(y + 1, x, b, &k[0]);
        ss += row(y, x, b, &k[3]);
        ss += row(y - 1, x, b, &k[6]);
        o[(y * w + x) * ch + b] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : uint8_t(ss);
      }
  return out;
}

// --- Convert.c ------------------------------------------------------------------------------------

uint8_t l24(const uint8_t* rgb) { return uint8_t((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16); }

void rgb_to_hsv(const uint8_t* in, uint8_t* out) {
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
  uint8_t uh = 0, us = 0;
  if (minc != maxc) {
    float cr = float(maxc - minc), s = cr / float(maxc);
    float rc = float(maxc - r) / cr, gc = float(maxc - g) / cr, bc = float(maxc - b) / cr, h;
    if (r == maxc)
      h = bc - gc;
    else if (g == maxc)
      h = float(2.0 + rc - bc);
    else
      h = float(4.0 + gc - rc);
    h = float(std::fmod(h / 6.0 + 1.0, 1.0));
    uh = clip8(int(h * 255.0));
    us = clip8(int(s * 255.0));
  }
  out[0] = uh, out[1] = us, out[2] = maxc;
}

void hsv_to_rgb(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  int i = int(std::floor(float(h) * 6.0 / 255.0));
  float f = float(float(h) * 6.0 / 255.0 - float(i));
  float fs = float(float(s) / 255.0);
  uint8_t up = clip8(int(std::round(float(v) * (1.0 - fs))));
  uint8_t uq = clip8(int(std::round(float(v) * (1.0 - fs * f))));
  uint8_t ut = clip8(int(std::round(float(v) * (1.0 - fs * (1.0 - f)))));
  const uint8_t table[6][3] = {{v, ut, up}, {uq, v, up}, {up, v, ut}, {up, uq, v}, {ut, up, v}, {v, up, uq}};
  std::copy(table[i % 6], table[i % 6] + 3, out);
}

// --- ImageOps.py: per-band lookup tables -----------------------------------------------------------

using Lut = std::array<uint8_t, 256>;

at::Tensor apply_luts(const at::Tensor& image, const std::vector<Lut>& luts) {
  at::Tensor out = at::empty_like(image);
  const int64_t ch = image.size(2), n = image.size(0) * image.size(1);
  const uint8_t* in = image.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < ch; ++b) o[i * ch + b] = luts[size_t(luts.size() == 1 ? 0 : b)][in[i * ch + b]];
  return out;
}

at::Tensor apply_lut(const at::Tensor& image, uint8_t (*f)(int, double), double arg) {
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[size_t(i)] = f(i, arg);
  return apply_luts(contiguous_image(image), {lut});
}

std::vector<std::array<int64_t, 256>> histograms(const at::Tensor& image) {
  const int64_t ch = image.size(2), n = image.size(0) * image.size(1);
  std::vector<std::array<int64_t, 256>> h(static_cast<size_t>(ch));
  for (auto& band : h) band.fill(0);
  const uint8_t* in = image.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < ch; ++b) ++h[size_t(b)][in[i * ch + b]];
  return h;
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

at::Tensor affine(const at::Tensor& image, const std::array<double, 6>& matrix, const std::vector<double>& fill) {
  at::Tensor in = contiguous_image(image);
  return affine_nearest(in, in.size(0), in.size(1), matrix, fill);
}

std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle, std::array<double, 2> translate,
                                            double scale, std::array<double, 2> shear) {
  const double rot = radians(angle), sx = radians(shear[0]), sy = radians(shear[1]);
  const double cx = center[0], cy = center[1], tx = translate[0], ty = translate[1];
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

at::Tensor affine(const at::Tensor& image, double angle, std::array<double, 2> translate, double scale,
                  std::array<double, 2> shear, const std::vector<double>& fill, const std::array<double, 2>* center) {
  std::array<double, 2> c = center ? *center : std::array<double, 2>{double(image.size(1)) * 0.5, double(image.size(0)) * 0.5};
  return affine(image, inverse_affine_matrix(c, angle, translate, scale, shear), fill);
}

namespace {
// Python's round(x, 15): the decimal rounding done exactly (glibc's printf rounds the exact binary
// value, ties to even, as CPython's dtoa), read back to the nearest double.
double round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}
}  // namespace

at::Tensor rotate(const at::Tensor& image, double angle, const std::vector<double>& fill, bool expand,
                  const std::array<double, 2>* center) {
  at::Tensor in = contiguous_image(image);
  int64_t h = in.size(0), w = in.size(1);
  angle = std::fmod(angle, 360.0);  // Python's angle % 360.0: the sign of the divisor
  if (angle < 0) angle += 360.0;
  if (!center) {
    if (angle == 0) return in.clone();
    if (angle == 180) return in.flip({0, 1}).contiguous();
    if ((angle == 90 || angle == 270) && (expand || w == h)) return at::rot90(in, angle == 90 ? 1 : 3, {0, 1}).contiguous();
  }
  const double cx = center ? (*center)[0] : double(w) / 2, cy = center ? (*center)[1] : double(h) / 2;
  const double t = -radians(angle);
  std::array<double, 6> m = {round15(std::cos(t)), round15(std::sin(t)), 0.0, round15(-std::sin(t)), round15(std::cos(t)), 0.0};
  auto apply = [&m](double x, double y) { return std::array<double, 2>{m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]}; };
  auto shifted = apply(-cx - 0, -cy - 0);
  m[2] = shifted[0] + cx;
  m[5] = shifted[1] + cy;
  if (expand) {
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (auto [x, y] : {std::pair<double, double>{0, 0}, {double(w), 0}, {double(w), double(h)}, {0, double(h)}}) {
      auto p = apply(x, y);
      xmin = std::min(xmin, p[0]), xmax = std::max(xmax, p[0]), ymin = std::min(ymin, p[1]), ymax = std::max(ymax, p[1]);
    }
    const int64_t nw = int64_t(std::ceil(xmax)) - int64_t(std::floor(xmin));
    const int64_t nh = int64_t(std::ceil(ymax)) - int64_t(std::floor(ymin));
    auto corner = apply(-double(nw - w) / 2.0, -double(nh - h) / 2.0);
    m[2] = corner[0], m[5] = corner[1];
    w = nw, h = nh;
  }
  return affine_nearest(in, h, w, m, fill);
}

at::Tensor brightness(const at::Tensor& image, double factor) {
  at::Tensor in = contiguous_image(image);
  return blend(at::zeros_like(in), in, factor);
}

at::Tensor saturation(const at::Tensor& image, double factor) {
  at::Tensor in = contiguous_image(image);
  if (in.size(2) == 1) return in.clone();  // ImageEnhance.Color of an L image blends it with itself
  return blend(luma(in).expand({-1, -1, 3}).contiguous(), in, factor);
}

at::Tensor contrast(const at::Tensor& image, double factor) {
  at::Tensor in = contiguous_image(image);
  auto hist = histograms(in.size(2) == 1 ? in : luma(in))[0];
  int64_t sum = 0, count = 0;
  for (int i = 0; i < 256; ++i) sum += i * hist[size_t(i)], count += hist[size_t(i)];
  const int mean = int(double(sum) / double(count) + 0.5);  // ImageStat's mean, rounded as ImageEnhance does
  return blend(at::full_like(in, mean), in, factor);
}

at::Tensor sharpness(const at::Tensor& image, double factor) {
  at::Tensor in = contiguous_image(image);
  return blend(smooth(in), in, factor);
}

at::Tensor hue(const at::Tensor& image, double factor) {
  at::Tensor in = contiguous_image(image);
  if (in.size(2) == 1) return in.clone();
  const uint8_t shift = uint8_t(int64_t(factor * 255) & 0xff);  // np.uint8(factor * 255) wraps negatives
  at::Tensor out = at::empty_like(in);
  const uint8_t* p = in.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  for (int64_t i = 0, n = in.size(0) * in.size(1); i < n; ++i) {
    uint8_t hsv[3];
    rgb_to_hsv(p + 3 * i, hsv);
    hsv[0] = uint8_t(hsv[0] + shift);
    hsv_to_rgb(hsv, o + 3 * i);
  }
  return out;
}

at::Tensor luma(const at::Tensor& image) {
  at::Tensor in = contiguous_image(image);
  if (in.size(2) == 1) return in.clone();
  at::Tensor out = at::empty({in.size(0), in.size(1), 1}, at::kByte);
  const uint8_t* p = in.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  for (int64_t i = 0, n = in.size(0) * in.size(1); i < n; ++i) o[i] = l24(p + 3 * i);
  return out;
}

at::Tensor posterize(const at::Tensor& image, int bits) {
  return apply_lut(image, [](int i, double b) { return uint8_t(i & ~((1 << (8 - int(b))) - 1)); }, bits);
}

at::Tensor solarize(const at::Tensor& image, double threshold) {
  return apply_lut(image, [](int i, double t) { return uint8_t(i < t ? i : 255 - i); }, threshold);
}

at::Tensor invert(const at::Tensor& image) {
  return apply_lut(image, [](int i, double) { return uint8_t(255 - i); }, 0);
}

at::Tensor autocontrast(const at::Tensor& image) {
  at::Tensor in = contiguous_image(image);
  std::vector<Lut> luts;
  for (auto& h : histograms(in)) {
    int lo = 0, hi = 255;
    while (lo < 255 && !h[size_t(lo)]) ++lo;
    while (hi > 0 && !h[size_t(hi)]) --hi;
    Lut lut;
    const double scale = hi > lo ? 255.0 / (hi - lo) : 0, offset = -lo * scale;
    for (int i = 0; i < 256; ++i) lut[size_t(i)] = hi <= lo ? uint8_t(i) : clip8(int(i * scale + offset));
    luts.push_back(lut);
  }
  return apply_luts(in, luts);
}

at::Tensor equalize(const at::Tensor& image) {
  at::Tensor in = contiguous_image(image);
  std::vector<Lut> luts;
  for (auto& h : histograms(in)) {
    int64_t total = 0, last = 0, nonzero = 0;
    for (int64_t v : h)
      if (v) total += v, last = v, ++nonzero;
    const int64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
    Lut lut;
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      lut[size_t(i)] = step ? uint8_t(std::min<int64_t>(n / step, 255)) : uint8_t(i);
      n += h[size_t(i)];
    }
    luts.push_back(lut);
  }
  return apply_luts(in, luts);
}

}  // namespace trainrun::pil
