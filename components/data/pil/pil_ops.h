// What torchvision's transforms do to PIL images, ported from Pillow's C and Python so that the
// pixels are the same bit for bit (Pillow 9.4 on Debian 12 and 11.1 on Debian 13 share this
// code; tests/components/augment_test.cpp compares every function with the real one).
// Images are uint8 H x W x C tensors, C = 1 (PIL mode L) or 3 (RGB); results are new tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trainrun::pil {

enum class Filter { nearest, bilinear, bicubic };  // Image.NEAREST, BILINEAR, BICUBIC

// "nearest" | "bilinear" | "bicubic" (torchvision's InterpolationMode values); throws otherwise.
Filter filter_named(const std::string& name);

// Image.resize((width, height), filter): ImagingResample's two separable fixed-point passes
// (bilinear, bicubic with a = -0.5, both antialiased when shrinking), or nearest as an affine scale.
at::Tensor resize(const at::Tensor& image, int64_t height, int64_t width, Filter filter);

// Image.transform(size, AFFINE, matrix, NEAREST, fillcolor=fill): output pixel (x, y) samples the
// input at matrix * (x + 0.5, y + 0.5), outside pixels take `fill` (one value per channel, or one).
at::Tensor affine(const at::Tensor& image, const std::array<double, 6>& matrix, const std::vector<double>& fill);

// torchvision.transforms.functional._get_inverse_affine_matrix (degrees, pixels).
std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle, std::array<double, 2> translate,
                                            double scale, std::array<double, 2> shear);

// F.affine on a PIL image: centre (w / 2, h / 2) unless given, NEAREST.
at::Tensor affine(const at::Tensor& image, double angle, std::array<double, 2> translate, double scale,
                  std::array<double, 2> shear, const std::vector<double>& fill, const std::array<double, 2>* center = nullptr);

// Image.rotate(angle, NEAREST, expand, center, fillcolor=fill) (F.rotate on a PIL image): counter-
// clockwise in degrees about `center` (pixels; default the image's centre (w / 2, h / 2)).
at::Tensor rotate(const at::Tensor& image, double angle, const std::vector<double>& fill, bool expand = false,
                  const std::array<double, 2>* center = nullptr);

// ImageEnhance: Brightness, Color (saturation), Contrast and Sharpness with `factor`.
at::Tensor brightness(const at::Tensor& image, double factor);
at::Tensor saturation(const at::Tensor& image, double factor);
at::Tensor contrast(const at::Tensor& image, double factor);
at::Tensor sharpness(const at::Tensor& image, double factor);

// F.adjust_hue on a PIL image: through PIL's HSV, hue shifted by uint8(factor * 255) with wrap.
at::Tensor hue(const at::Tensor& image, double factor);

// image.convert("L") (ITU-R 601-2 luma, PIL's integer weights), as H x W x 1.
at::Tensor luma(const at::Tensor& image);

// ImageOps.posterize, solarize, autocontrast (cutoff 0), equalize and invert.
at::Tensor posterize(const at::Tensor& image, int bits);
at::Tensor solarize(const at::Tensor& image, double threshold);
at::Tensor autocontrast(const at::Tensor& image);
at::Tensor equalize(const at::Tensor& image);
at::Tensor invert(const at::Tensor& image);

}  // namespace trainrun::pil
