// Image files -> uint8 H x W x C tensors, decoded by OpenCV in PIL's channel order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trainrun {

// A crop rectangle in pixels (torchvision's top, left, height, width).
struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
};

// Picks the box to crop out of an image of the given height and width (called exactly once).
using RegionPicker = std::function<CropBox(int64_t height, int64_t width)>;

// Decodes an image file (JPEG, PNG, BMP, TIFF, WebP, PPM/PGM: whatever OpenCV's imgcodecs reads)
// into uint8 H x W x C: channels 3 = RGB (PIL's convert('RGB')), channels 1 = luma (PIL's
// convert('L'), ITU-R 601-2 weights). JPEGs (YCbCr, RGB or grayscale) are decoded by
// libjpeg-turbo straight into RGB, as PIL decodes them (the same library and settings OpenCV
// uses, without its BGR round trip); other files and JPEGs libjpeg warns about go through
// OpenCV. The EXIF orientation tag is not applied, as with torchvision's PIL loader. Throws
// UnreadableFile (a DataError) naming the file when it is missing or does not decode.
at::Tensor decode_image(const std::string& path, int64_t channels);

// decode_image(path, channels) cropped to pick(H, W), the same pixels bit for bit. A baseline or
// progressive JPEG (YCbCr, RGB or grayscale) is decoded only as far as the box needs: libjpeg-turbo
// reads the header, skips the rows above the box and decodes a column window one chroma sample
// wider than the box on each side (so fancy chroma upsampling at the box's edges sees the same
// neighbours as in a full decode), then the box is sliced out. Anything else is decoded whole,
// then cropped.
at::Tensor decode_image_region(const std::string& path, int64_t channels, const RegionPicker& pick);

// decode_image_region of a file's bytes already in memory (a tar shard's member); `what` names
// them in errors ("shard.tar: key.jpg").
at::Tensor decode_image_bytes(const std::vector<unsigned char>& data, const std::string& what, int64_t channels,
                              const RegionPicker& pick);

// Writes a uint8 H x W x C image (RGB or grayscale) in the format the extension names
// (.jpg at OpenCV's default quality 95, .png, ...). For fixtures and benchmarks.
void write_image(const std::string& path, const at::Tensor& image);

// A uint8 H x W x C image (RGB or grayscale) as the bytes of a PNG file: lossless, so a reader
// decodes exactly these pixels (the image field `trainrun shards` writes for datasets that are
// not image files).
std::vector<unsigned char> encode_png(const at::Tensor& image);

}  // namespace trainrun
