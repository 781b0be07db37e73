// Image files -> uint8 H x W x C tensors, decoded by OpenCV in PIL's channel order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace trainrun {

// Decodes an image file (JPEG, PNG, BMP, TIFF, WebP, PPM/PGM: whatever OpenCV's imgcodecs reads)
// into uint8 H x W x C: channels 3 = RGB (PIL's convert('RGB')), channels 1 = luma (PIL's
// convert('L'), ITU-R 601-2 weights). The EXIF orientation tag is not applied, as with
// torchvision's PIL loader. Throws UnreadableFile (a DataError) naming the file when
// it is missing or does not decode.
at::Tensor decode_image(const std::string& path, int64_t channels);

// Writes a uint8 H x W x C image (RGB or grayscale) in the format the extension names
// (.jpg at OpenCV's default quality 95, .png, ...). For fixtures and benchmarks.
void write_image(const std::string& path, const at::Tensor& image);

}  // namespace trainrun
