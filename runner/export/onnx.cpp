#include "runner/export/onnx.h"

#include "runner/export/onnx_graph.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <set>

namespace trainrun {

namespace {

using onnx_export::Converter;

constexpr int64_t kMinOpset = 17;  // LayerNormalization

// The IR version that came with each opset (onnx's docs/Versioning.md): the oldest a reader needs.
int64_t ir_version_for(int64_t opset) {
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return onnx::IR_VERSION;
}

void declare(onnx::ValueInfoProto& value, const std::string& name, at::ScalarType dtype, const std::vector<int64_t>& sizes) {
  value.set_name(name);
  auto& tensor = *value.mutable_type()->mutable_tensor_type();
  tensor.set_elem_type(onnx_export::onnx_dtype(dtype));
  auto& shape = *tensor.mutable_shape();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i == 0) shape.add_dim()->set_dim_param("batch");
    else shape.add_dim()->set_dim_value(sizes[i]);
  }
}

std::map<std::string, at::Tensor> parameters_and_buffers(const torch::jit::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) out[p.name] = p.value;
  for (const auto& b : module.named_buffers(/*recurse=*/true)) out[b.name] = b.value;
  return out;
}

// The traced output is named `logits`: the node that made it is renamed (an output that is the
// input or a parameter itself goes through an Identity).
void name_output(onnx::GraphProto& graph, const std::string& made, bool is_node_output) {
  if (!is_node_output) {
    auto& identity = *graph.add_node();
    identity.set_op_type("Identity");
    identity.set_name("Identity_logits");
    identity.add_input(made);
    identity.add_output("logits");
    return;
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& in : *node.mutable_input())
      if (in == made) in = "logits";
    for (auto& out : *node.mutable_output())
      if (out == made) out = "logits";
  }
}

bool made_by_a_node(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& node : graph.node())
    for (const auto& out : node.output())
      if (out == name) return true;
  return false;
}

// Nodes whose outputs nothing reads (the Transpose of a weight that Gemm takes transposed) are
// dropped, and initializers nothing reads with them.
void drop_unused(onnx::GraphProto& graph) {
  std::set<std::string> used;
  for (const auto& out : graph.output()) used.insert(out.name());
  std::vector<bool> keep(std::size_t(graph.node_size()), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const auto& out : node.output()) keep[i] = keep[i] || used.count(out);
    if (keep[i]) used.insert(node.input().begin(), node.input().end());
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i)
    if (keep[i]) nodes.Add()->Swap(graph.mutable_node(i));
  graph.mutable_node()->Swap(&nodes);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (auto& init : *graph.mutable_initializer())
    if (used.count(init.name())) initializers.Add()->Swap(&init);
  graph.mutable_initializer()->Swap(&initializers);
}

// onnx's checker and its strict shape inference with type checks: what onnx.checker.check_model
// (full_check=True) runs. A failure here is a wrong conversion, a bug of ours.
void check(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto inferred = model;
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/true, /*strict_mode=*/1));
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw std::logic_error("ONNX export: onnx's checker rejects the converted model (a trainrun bug): " + what);
  }
}

void convert_graph(const torch::jit::Module& traced, const std::vector<int64_t>& input_size, int64_t opset,
                   onnx::GraphProto& out) {
  auto graph = traced.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  // Tensors the forward makes from numbers (torch::tensor(2.0): aten::scalar_tensor) become constants.
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateDeadCode(graph);
  if (graph->inputs().size() != 2 || graph->outputs().size() != 1)
    throw RecipeError("ONNX export: the traced forward must take one input and return one tensor");
  Converter c(out, opset, parameters_and_buffers(traced));
  std::vector<int64_t> input_shape{1};
  input_shape.insert(input_shape.end(), input_size.begin(), input_size.end());
  declare(*out.add_input(), "input", at::kFloat, input_shape);
  c.bind_module(graph->inputs()[0], "");
  c.bind(graph->inputs()[1], "input");
  int index = 0;
  for (const torch::jit::Node* node : graph->nodes()) c.convert(*node, index++);
  const torch::jit::Value* result = graph->outputs()[0];
  const std::string made = c.tensor(result);
  name_output(out, made, made_by_a_node(out, made));
  declare(*out.add_output(), "logits", c.dtype(result), c.shape(result));
  drop_unused(out);
}

}  // namespace

int64_t onnx_max_opset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
}

void write_onnx(const torch::jit::Module& traced, const std::vector<int64_t>& input_size, const std::string& path,
                const OnnxOptions& options) {
  if (options.opset < kMinOpset || options.opset > onnx_max_opset())
    throw RecipeError("ONNX export: opset " + std::to_string(options.opset) + " (this build writes " +
                      std::to_string(kMinOpset) + " to " + std::to_string(onnx_max_opset()) + ")");
  onnx::ModelProto model;
  model.set_ir_version(ir_version_for(options.opset));
  model.set_producer_name("trainrun");
  model.set_producer_version(TRAINRUN_VERSION);
  auto& opset = *model.add_opset_import();
  opset.set_domain(onnx::ONNX_DOMAIN);
  opset.set_version(options.opset);
  for (const auto& [key, value] : options.metadata) {
    auto& prop = *model.add_metadata_props();
    prop.set_key(key);
    prop.set_value(value);
  }
  auto& graph = *model.mutable_graph();
  graph.set_name("trainrun");
  convert_graph(traced, input_size, options.opset, graph);
  check(model);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("ONNX export: the model does not fit a protobuf (2 GiB)");
  write_file_atomic(path, bytes);
}

}  // namespace trainrun
