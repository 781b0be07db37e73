// What the ports of Pillow (pil_resample, pil_affine, pil_enhance, pil_colour and pil_imageops
// .cpp, behind pil_ops.h) share; internal to components/data. They port Pillow's
// src/libImaging/{Resample,Geometry,Blend,Filter,Convert}.c, PIL/ImageEnhance.py, PIL/ImageOps.py
// and PIL/Image.py's rotate, at tags 9.4.0 and 11.1.0, whose code for these is the same. The
// arithmetic keeps Pillow's types (float where Pillow computes in float, double where in double,
// 22-bit fixed point in the resampler, 16.16 in the affine transform) so the results are Pillow's
// bit for bit; the project builds with -ffp-contract=off so no multiply-add is fused.
#pragma once

#include "components/data/pil/pil_ops.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace trainrun::pil {

inline at::Tensor contiguous_image(const at::Tensor& image) {
  if (image.scalar_type() != at::kByte || image.dim() != 3 || (image.size(2) != 1 && image.size(2) != 3))
    throw std::invalid_argument("expected a uint8 H x W x C image with 1 or 3 channels (put image transforms before to_tensor)");
  return image.contiguous();
}

inline uint8_t clip8(int v) { return uint8_t(std::clamp(v, 0, 255)); }

// ImagingScaleAffine / ImagingTransformAffine with NEAREST (pil_affine.cpp): an out_h x out_w image
// whose pixel (x, y) is `in`'s at a * (x + 0.5, y + 0.5), `fill` where that is outside.
at::Tensor affine_nearest(const at::Tensor& in, int64_t out_h, int64_t out_w, const std::array<double, 6>& a,
                          const std::vector<double>& fill);

// The image's histogram per band (pil_imageops.cpp).
std::vector<std::array<int64_t, 256>> histograms(const at::Tensor& image);

}  // namespace trainrun::pil
