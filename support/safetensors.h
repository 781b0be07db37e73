// The safetensors format (huggingface/safetensors): 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then raw little-endian data.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

using TensorList = std::vector<std::pair<std::string, at::Tensor>>;

struct WeightsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The format's name of a dtype (F32, BF16, I64, ...); WeightsError for one it has none for.
std::string safetensors_dtype(at::ScalarType type);

// Writes F32/F16/BF16/I64/... tensors (contiguous CPU copies) to `path` atomically: a temporary
// file in the same folder, fsynced, then renamed over `path`.
void save_safetensors(const std::string& path, const TensorList& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// The bytes save_safetensors would write (for a file a checkpoint adds, CheckpointFiles).
std::string safetensors_bytes(const TensorList& tensors,
                              const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Reads every tensor, in file order. Throws WeightsError naming the file for a truncated file,
// a bad header, an unknown dtype or offsets outside the data.
TensorList load_safetensors(const std::string& path);

}  // namespace trainrun
