// Image.transform(AFFINE, NEAREST), F.affine's matrix and Image.rotate, ported from Pillow's
// src/libImaging/Geometry.c (ImagingScaleAffine, ImagingTransformAffine: 16.16 fixed point, or
// double where the matrix would overflow it), PIL/Image.py's rotate and torchvision's
// _get_inverse_affine_matrix.
#include "components/data/pil/pil_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace trainrun::pil {
namespace {

constexpr double kPi = 3.14159265358979323846;  // CPython's Py_MATH_PI
double radians(double degrees) { return degrees * (kPi / 180.0); }

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

// Python's round(x, 15): the decimal rounding done exactly (glibc's printf rounds the exact binary
// value, ties to even, as CPython's dtoa), read back to the nearest double.
double round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

}  // namespace

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

}  // namespace trainrun::pil
