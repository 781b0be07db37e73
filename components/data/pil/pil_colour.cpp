// Colour conversions: F.adjust_hue on a PIL image (through PIL's HSV) and image.convert("L"),
// ported from Pillow's src/libImaging/Convert.c.
#include "components/data/pil/pil_common.h"

#include <algorithm>
#include <cmath>

namespace trainrun::pil {
namespace {

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

}  // namespace

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

}  // namespace trainrun::pil
