// Image files to uint8 HWC tensors, decoded with OpenCV in RGB order (PIL's), or as one
// grayscale channel (PIL's convert('L')) for single-channel models.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace trainrun {

// channels: 3 (RGB) or 1 (grayscale). Throws DataError naming the file when it cannot be read
// or decoded.
at::Tensor decode_image(const std::string& path, int64_t channels);

}  // namespace trainrun
