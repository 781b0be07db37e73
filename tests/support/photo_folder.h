// Test data for the recipes that train on "your photos".
#pragma once

#include "test_util.h"

#include <filesystem>
#include <random>
#include <string>

namespace trainrun::test {

// A folder of tiny images in torchvision's ImageFolder layout, data/photos/CLASS/N.ppm, for the
// recipes that train on "your photos".
inline void write_photo_folder(const fs::path& root) {
  std::mt19937 rng(7);
  for (std::string cls : {"cat", "dog"})
    for (int i = 0; i < 6; ++i) {
      std::string ppm = "P6\n40 30\n255\n";
      for (int b = 0; b < 40 * 30 * 3; ++b) ppm += char(rng() % 256);
      write_file((root / "data/photos" / cls / (std::to_string(i) + ".ppm")).string(), ppm);
    }
}

}  // namespace trainrun::test
