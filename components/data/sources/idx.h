// The IDX format of MNIST and Fashion-MNIST (raw or gzip-compressed).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace trainrun {

// Reads an IDX file into a uint8 tensor of its dimensions. Throws DataError naming the file
// when it is missing, not IDX, not uint8, or shorter than its header says.
at::Tensor read_idx(const std::string& path);

}  // namespace trainrun
