// The ops of torchvision's augment policies (autoaugment._apply_op) and F.gaussian_blur on PIL
// images, their pixels from components/data/pil/pil_ops.h (augment.h).
#include "components/data/transforms/augment.h"

#include "components/data/pil/pil_ops.h"
#include "components/data/transforms/augment_common.h"

#include <array>
#include <cmath>
#include <stdexcept>

namespace trainrun {
namespace {

constexpr double kRadToDeg = 180.0 / 3.14159265358979323846;  // CPython's math.degrees

}  // namespace

at::Tensor apply_augment_op(const at::Tensor& image, const std::string& op, double magnitude, const std::vector<double>& fill) {
  if (op == "ShearX" || op == "ShearY") {
    const std::array<double, 2> origin{0, 0};
    const double degrees = std::atan(magnitude) * kRadToDeg;
    return pil::affine(image, 0.0, {0, 0}, 1.0, op == "ShearX" ? std::array<double, 2>{degrees, 0.0} : std::array<double, 2>{0.0, degrees},
                       fill, &origin);
  }
  if (op == "TranslateX") return pil::affine(image, 0.0, {std::trunc(magnitude), 0}, 1.0, {0.0, 0.0}, fill);
  if (op == "TranslateY") return pil::affine(image, 0.0, {0, std::trunc(magnitude)}, 1.0, {0.0, 0.0}, fill);
  if (op == "Rotate") return pil::rotate(image, magnitude, fill);
  if (op == "Brightness") return pil::brightness(image, 1.0 + magnitude);
  if (op == "Color") return pil::saturation(image, 1.0 + magnitude);
  if (op == "Contrast") return pil::contrast(image, 1.0 + magnitude);
  if (op == "Sharpness") return pil::sharpness(image, 1.0 + magnitude);
  if (op == "Posterize") return pil::posterize(image, int(magnitude));
  if (op == "Solarize") return pil::solarize(image, magnitude);
  if (op == "AutoContrast") return pil::autocontrast(image);
  if (op == "Equalize") return pil::equalize(image);
  if (op == "Invert") return pil::invert(image);
  if (op == "Identity") return image;
  throw std::invalid_argument("unknown augment op '" + op + "'");
}

at::Tensor gaussian_blur(const at::Tensor& image, int64_t kernel_w, int64_t kernel_h, double sigma_x, double sigma_y) {
  auto kernel1d = [](int64_t size, double sigma) {
    const double half = double(size - 1) * 0.5;
    at::Tensor x = float_linspace(-half, half, size);
    at::Tensor pdf = at::exp((x / sigma).pow(2) * -0.5);
    return pdf / pdf.sum();
  };
  at::Tensor kx = kernel1d(kernel_w, sigma_x), ky = kernel1d(kernel_h, sigma_y);
  at::Tensor kernel = at::mm(ky.unsqueeze(1), kx.unsqueeze(0));
  const int64_t c = image.size(2);
  at::Tensor img = image.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat);
  img = at::reflection_pad2d(img, {kernel_w / 2, kernel_w / 2, kernel_h / 2, kernel_h / 2});
  const std::vector<int64_t> ones{1, 1}, zeros{0, 0};
  img = at::conv2d(img, kernel.expand({c, 1, kernel_h, kernel_w}), c10::optional<at::Tensor>(), ones, zeros, ones, c);
  return img.squeeze(0).round().to(at::kByte).permute({1, 2, 0}).contiguous();
}

}  // namespace trainrun
