// ImageEnhance's Brightness, Color (saturation), Contrast and Sharpness, each a blend of the image
// with a degenerate one, ported from Pillow's PIL/ImageEnhance.py, src/libImaging/Blend.c
// (Image.blend) and Filter.c (the SMOOTH filter).
#include "components/data/pil/pil_common.h"

namespace trainrun::pil {
namespace {

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

}  // namespace

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

}  // namespace trainrun::pil
