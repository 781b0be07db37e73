// The state of one ONNX conversion, shared by the walk over the traced graph (onnx.cpp) and the
// conversions of the aten operators (onnx_ops.h): what each traced value stands for, and the
// ONNX nodes written so far. Internal to runner/export/onnx*.cpp, which are compiled with the
// ONNX_NAMESPACE / ONNX_ML definitions of Debian's libonnx (CMakeLists.txt).
#pragma once

#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trainrun::onnx_export {

// A traced value as the ONNX graph sees it.
struct Bound {
  enum class Kind {
    Tensor,      // `name` is an ONNX value: the input, an initializer, a node's output
    Constant,    // `constant`: a number, a list of numbers, None, a string, a tensor
    Module,      // `name` is the state_dict prefix of a submodule ("layer1.0.")
    TensorList,  // `names`: prim::ListConstruct of tensors (aten::cat's input)
  };
  Kind kind = Kind::Constant;
  std::string name;
  c10::IValue constant;
  std::vector<std::string> names;
};

class Converter {
 public:
  // `state`: the traced module's parameters and buffers by state_dict name (initializers are
  // written for those the graph uses).
  Converter(onnx::GraphProto& graph, int64_t opset, std::map<std::string, at::Tensor> state);

  int64_t opset() const { return opset_; }
  // Converts one node of the (inlined) traced graph; its outputs are bound afterwards.
  void convert(const torch::jit::Node& node, int index);
  // "ONNX export: aten::foo (node 12: %3 = aten::foo(%2, %1)): WHY" as a RecipeError.
  [[noreturn]] void fail(const std::string& why) const;

  // The node's inputs, by what they must be (each fails with the node named otherwise).
  std::string tensor(const torch::jit::Value* v);  // its ONNX name; constants become Constant nodes
  bool is_none(const torch::jit::Value* v) const;
  bool is_constant(const torch::jit::Value* v) const;
  const c10::IValue& constant(const torch::jit::Value* v) const;
  int64_t integer(const torch::jit::Value* v) const;
  double number(const torch::jit::Value* v) const;
  bool boolean(const torch::jit::Value* v) const;
  std::vector<int64_t> ints(const torch::jit::Value* v) const;  // an int list (an int: one element)
  const std::vector<std::string>& tensors(const torch::jit::Value* v) const;
  std::vector<int64_t> shape(const torch::jit::Value* v) const;  // the sizes the trace recorded
  at::ScalarType dtype(const torch::jit::Value* v) const;

  // Writing: a node with one output named after it (NodeProto::output(0)).
  onnx::NodeProto& add(const std::string& op, const std::vector<std::string>& inputs);
  std::string scalar(double value, at::ScalarType type);  // a 0-d Constant
  std::string int64s(const std::vector<int64_t>& values);  // a 1-D int64 Constant
  std::string constant_tensor(const at::Tensor& value);

  void bind(const torch::jit::Value* v, const std::string& onnx_name);
  void bind_constant(const torch::jit::Value* v, c10::IValue value);
  void bind_module(const torch::jit::Value* v, const std::string& prefix);  // "" for the model itself

 private:
  const Bound& bound(const torch::jit::Value* v) const;
  const at::Tensor* known_tensor(const torch::jit::Value* v) const;
  void convert_prim(const torch::jit::Node& node);
  void convert_get_attr(const torch::jit::Node& node);
  void convert_list(const torch::jit::Node& node);
  std::string fresh_name(const std::string& op);

  onnx::GraphProto& graph_;
  int64_t opset_;
  std::map<std::string, at::Tensor> state_;
  std::set<std::string> initialized_;
  std::map<const torch::jit::Value*, Bound> values_;
  std::map<std::string, int> counters_;
  const torch::jit::Node* node_ = nullptr;
  int node_index_ = 0;
};

void set_int(onnx::NodeProto& node, const std::string& name, int64_t value);
void set_float(onnx::NodeProto& node, const std::string& name, double value);
void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_string(onnx::NodeProto& node, const std::string& name, const std::string& value);

// ONNX's element type of a torch dtype; fails on types ONNX has no name for.
int32_t onnx_dtype(at::ScalarType type);
// The tensor's bytes as a TensorProto (raw_data, little-endian as on every platform we build for).
void fill_tensor(onnx::TensorProto& proto, const at::Tensor& value);

// The conversions of aten operators, by node kind ("aten::conv2d"): each reads the node's inputs
// through the Converter, adds ONNX nodes and binds the node's outputs.
using OpConversion = void (*)(Converter& c, const torch::jit::Node& node);
const std::map<std::string, OpConversion>& op_conversions();

}  // namespace trainrun::onnx_export
