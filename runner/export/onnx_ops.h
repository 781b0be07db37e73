// What the aten -> ONNX conversions share, internal to runner/export/onnx*.cpp: the helpers more
// than one family of operators uses, and each family's part of the table that op_conversions()
// (onnx_ops.cpp) gathers. A conversion is found in the file named for its family.
#pragma once

#include "runner/export/onnx_graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainrun::onnx_export {

using torch::jit::Node;
using torch::jit::Value;

// The node's output is its input's value.
void same_tensor(Converter& c, const Node& n);

std::string onnx_unary(Converter& c, const std::string& op, const std::string& x);

// A per-spatial-dimension list as PyTorch accepts it: one value for all, or one each.
std::vector<int64_t> per_dim(const Converter& c, std::vector<int64_t> values, std::size_t spatial, const std::string& what);

// Each family adds its conversions, by node kind.
using ConversionTable = std::map<std::string, OpConversion>;
void elementwise_conversions(ConversionTable& t);  // onnx_elementwise.cpp: activations, arithmetic, eval-mode no-ops
void conv_norm_conversions(ConversionTable& t);    // onnx_conv_norm.cpp: convolution, normalisation
void pooling_conversions(ConversionTable& t);      // onnx_pooling.cpp
void reduction_conversions(ConversionTable& t);    // onnx_reduction.cpp: mean, softmax
void shape_conversions(ConversionTable& t);        // onnx_shape.cpp
void linalg_conversions(ConversionTable& t);       // onnx_linalg.cpp: linear, addmm, matmul

}  // namespace trainrun::onnx_export
