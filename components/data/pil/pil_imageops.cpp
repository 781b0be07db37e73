// ImageOps.posterize, solarize, invert, autocontrast and equalize, ported from Pillow's
// PIL/ImageOps.py: each a lookup table per band, built from the band's histogram for the last two.
#include "components/data/pil/pil_common.h"

#include <algorithm>

namespace trainrun::pil {
namespace {

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

}  // namespace

std::vector<std::array<int64_t, 256>> histograms(const at::Tensor& image) {
  const int64_t ch = image.size(2), n = image.size(0) * image.size(1);
  std::vector<std::array<int64_t, 256>> h(static_cast<size_t>(ch));
  for (auto& band : h) band.fill(0);
  const uint8_t* in = image.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < ch; ++b) ++h[size_t(b)][in[i * ch + b]];
  return h;
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
