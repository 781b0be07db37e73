// The image decoders (components/data/image.cpp): the whole-image decode and the crop-aware JPEG
// region decode, with a crop box drawn from the input as RandomResizedCrop draws one (any box
// inside the image), in 1 or 3 channels. What comes back must have the box's shape.
#include "components/data/dataset.h"
#include "components/data/image.h"
#include "fuzz/fuzz_util.h"

#include <ATen/core/Tensor.h>
#include <fuzzer/FuzzedDataProvider.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  if (size < 3) return 0;
  FuzzedDataProvider in(data, 3);
  const int64_t channels = in.ConsumeBool() ? 3 : 1;
  const uint8_t a = in.ConsumeIntegral<uint8_t>(), b = in.ConsumeIntegral<uint8_t>();
  std::string path = fuzz::write_file("image.jpg", data + 3, size - 3);
  fuzz::expect_only<DataError>([&] {
    at::Tensor full = decode_image(path, channels);
    if (full.dim() != 3 || full.size(2) != channels) std::abort();
  });
  // A box of a/256..1 of each side at an offset drawn from b (always inside the image).
  CropBox box;
  fuzz::expect_only<DataError>([&] {
    at::Tensor crop = decode_image_region(path, channels, [&](int64_t h, int64_t w) {
      box.height = std::max<int64_t>(1, h - h * a / 256);
      box.width = std::max<int64_t>(1, w - w * a / 256);
      box.top = (h - box.height) * b / 255;
      box.left = (w - box.width) * (255 - b) / 255;
      return box;
    });
    if (crop.dim() != 3 || crop.size(0) != box.height || crop.size(1) != box.width || crop.size(2) != channels)
      std::abort();
  });
  return 0;
}
