#include "support/safetensors.h"

#include "support/durable_file.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>

namespace trainrun {

namespace {

const std::vector<std::pair<std::string, at::ScalarType>>& dtypes() {
  static const std::vector<std::pair<std::string, at::ScalarType>> table = {
      {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
      {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
      {"U8", at::kByte},    {"BOOL", at::kBool}};
  return table;
}

at::ScalarType dtype_of(const std::string& name, const std::string& path, const std::string& key) {
  for (auto& [n, type] : dtypes())
    if (n == name) return type;
  throw WeightsError(path + ": tensor '" + key + "' has unsupported dtype " + name);
}

}  // namespace

std::string safetensors_dtype(at::ScalarType t) {
  for (auto& [name, type] : dtypes())
    if (type == t) return name;
  throw WeightsError(std::string("safetensors: unsupported dtype ") + c10::toString(t));
}

namespace {

// The file's pieces: the 8-byte header length, the header, each tensor's bytes (`data` keeps
// the contiguous CPU copies alive).
std::vector<Bytes> safetensors_pieces(const TensorList& tensors, const std::map<std::string, std::string>& metadata,
                                      std::vector<at::Tensor>& data, std::string& text, unsigned char (&len)[8]) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = t.detach().cpu().contiguous();
    int64_t bytes = int64_t(c.numel() * c.element_size());
    header[name] = {{"dtype", safetensors_dtype(c.scalar_type())}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format pads the header to 8 bytes
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = (n >> (8 * i)) & 0xff;
  std::vector<Bytes> pieces = {{len, 8}, {text.data(), text.size()}};
  for (auto& c : data) pieces.push_back({c.data_ptr(), std::size_t(c.numel() * c.element_size())});
  return pieces;
}

}  // namespace

void save_safetensors(const std::string& path, const TensorList& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> data;
  std::string text;
  unsigned char len[8];
  std::vector<Bytes> pieces = safetensors_pieces(tensors, metadata, data, text, len);
  try {
    write_file_atomic(path, pieces);
  } catch (const FileWriteError& e) {
    throw WeightsError(e.what());
  }
}

std::string safetensors_bytes(const TensorList& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> data;
  std::string text;
  unsigned char len[8];
  std::string out;
  for (const Bytes& b : safetensors_pieces(tensors, metadata, data, text, len))
    out.append(static_cast<const char*>(b.data), b.size);
  return out;
}

TensorList load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw WeightsError(path + ": no such file");
  uint64_t file_size = std::filesystem::file_size(path);
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char*>(len), 8)) throw WeightsError(path + ": truncated (no header length)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(len[i]) << (8 * i);
  if (n > file_size - 8) throw WeightsError(path + ": header length " + std::to_string(n) + " exceeds the file");
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    throw WeightsError(path + ": bad header: " + e.what());
  }
  if (!header.is_object()) throw WeightsError(path + ": bad header: not a JSON object");
  uint64_t data_size = file_size - 8 - n;
  TensorList out;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      auto type = dtype_of(info.at("dtype").get<std::string>(), path, name);
      auto shape = info.at("shape").get<std::vector<int64_t>>();
      auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
      // The header is checked against the file before anything is allocated for it: a shape
      // whose size does not fit in 64 bits, or more bytes than the file holds, is a lie.
      uint64_t bytes = c10::elementSize(type);
      bool overflow = false;
      for (int64_t d : shape) {
        if (d < 0) throw WeightsError(path + ": tensor '" + name + "': negative size " + std::to_string(d) + " in its shape");
        overflow = overflow || __builtin_mul_overflow(bytes, uint64_t(d), &bytes) || bytes > uint64_t(INT64_MAX);
      }
      if (overflow || offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] - offsets[0] != bytes)
        throw WeightsError(path + ": tensor '" + name + "': data_offsets do not match its shape and dtype");
      if (offsets[1] > data_size)
        throw WeightsError(path + ": truncated: tensor '" + name + "' ends at byte " + std::to_string(offsets[1]) +
                           " of " + std::to_string(data_size));
      at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
      in.seekg(std::streamoff(8 + n + offsets[0]));
      in.read(static_cast<char*>(t.data_ptr()), std::streamsize(bytes));
      out.emplace_back(name, t);
    } catch (const nlohmann::json::exception& e) {
      throw WeightsError(path + ": bad header entry '" + name + "': " + e.what());
    }
  }
  return out;
}

}  // namespace trainrun
