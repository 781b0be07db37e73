// ONNX from C++ (`trainrun export --format onnx`): the graph trace_classifier records, converted op
// by op into an ONNX model that onnxruntime runs without trainrun, LibTorch or Python. LibTorch's
// C++ API has no aten -> ONNX conversion (torch.onnx's symbolic functions are Python), so the op
// table is ours (runner/export/onnx_ops.cpp, a file per family of operators beside it); the
// protobuf classes and the checker are onnx's own (Debian's libonnx-dev).
//
// The model: input `input` [batch, C, H, W] (float32, `batch` symbolic), output `logits`
// [batch, num_classes], parameters and buffers as initializers named by their state_dict names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace trainrun {

struct OnnxOptions {
  // The default ONNX operator set (ai.onnx): the first with LayerNormalization, read by onnx >= 1.12
  // and onnxruntime >= 1.12. Any opset from 17 to the newest the linked onnx knows may be asked for.
  int64_t opset = 17;
  std::map<std::string, std::string> metadata;  // the model's metadata_props
};

// The opsets write_onnx accepts: 17 .. the newest the linked libonnx knows.
int64_t onnx_max_opset();

// `traced` from trace_classifier(model, input_size) (runner/export/torchscript.h); writes the ONNX
// model to `path` whole or not at all, after onnx's checker and its strict shape inference accepted
// it. An operator without a conversion is a RecipeError naming it and its node.
void write_onnx(const torch::jit::Module& traced, const std::vector<int64_t>& input_size, const std::string& path,
                const OnnxOptions& options);

}  // namespace trainrun
