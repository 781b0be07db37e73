// torchvision's augmentation ops (transforms.autoaugment._apply_op) on uint8 H x W x C images, with
// PIL's pixels (components/data/pil/pil_ops.h). The registered transforms (color_jitter, rand_augment,
// trivial_augment_wide, auto_augment, random_erasing, grayscale, random_grayscale, gaussian_blur,
// random_rotation, random_affine) draw their parameters from the loader's per-example generator
// and then call these; the tests force the draws and compare with torchvision + PIL. The ops are
// in augment_ops.cpp, the magnitudes in augment_policy_tables.cpp, the transforms in
// augment_{policies,colour,geometry,erasing}.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace trainrun {

// One op of the augment policies by torchvision's name (ShearX, ShearY, TranslateX, TranslateY,
// Rotate, Brightness, Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize,
// Invert, Identity) with its signed magnitude, as _apply_op does it (NEAREST, `fill` outside).
at::Tensor apply_augment_op(const at::Tensor& image, const std::string& op, double magnitude,
                            const std::vector<double>& fill = {});

// The magnitude a policy gives op `op` at bin `bin` of `num_bins` for an image of height x width
// (the policies' _augmentation_space, computed with torch's float32 linspace as torchvision does);
// `wide` picks TrivialAugmentWide's ranges. Throws for an op without magnitudes.
double augment_magnitude(const std::string& op, int64_t bin, int64_t num_bins, int64_t height, int64_t width,
                         bool wide = false);

// F.gaussian_blur on a PIL image: the float32 Gaussian kernel (kernel_w x kernel_h, sigma_x,
// sigma_y), reflect padding, a grouped conv2d, rounded back to uint8.
at::Tensor gaussian_blur(const at::Tensor& image, int64_t kernel_w, int64_t kernel_h, double sigma_x, double sigma_y);

}  // namespace trainrun
