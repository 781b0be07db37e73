#include "runner/export/onnx_graph.h"

#include "support/errors.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include <cstring>
#include <sstream>

namespace trainrun::onnx_export {

using torch::jit::Node;
using torch::jit::Value;

namespace {

// "%3 = aten::foo(%2, %1)": the node as the graph prints it, on one line and without types.
std::string describe_node(const Node& node) {
  std::string out;
  for (std::size_t i = 0; i < node.outputs().size(); ++i) out += (i ? ", %" : "%") + node.outputs()[i]->debugName();
  out += (out.empty() ? "" : " = ") + std::string(node.kind().toQualString()) + "(";
  for (std::size_t i = 0; i < node.inputs().size(); ++i) out += (i ? ", %" : "%") + node.inputs()[i]->debugName();
  return out + ")";
}

std::string ivalue_text(const c10::IValue& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

Converter::Converter(onnx::GraphProto& graph, int64_t opset, std::map<std::string, at::Tensor> state)
    : graph_(graph), opset_(opset), state_(std::move(state)) {}

void Converter::fail(const std::string& why) const {
  std::string where = node_ ? std::string(node_->kind().toQualString()) + " (node " + std::to_string(node_index_) +
                                  ": " + describe_node(*node_) + "): "
                            : "";
  throw RecipeError("ONNX export: " + where + why);
}

const Bound& Converter::bound(const Value* v) const {
  auto it = values_.find(v);
  if (it == values_.end()) fail("%" + v->debugName() + " has no ONNX value (made by an operator not converted)");
  return it->second;
}

std::string Converter::tensor(const Value* v) {
  const Bound& b = bound(v);
  if (b.kind == Bound::Kind::Constant && b.constant.isTensor()) return constant_tensor(b.constant.toTensor());
  if (b.kind != Bound::Kind::Tensor) fail("%" + v->debugName() + " must be a tensor");
  auto it = state_.find(b.name);
  if (it != state_.end() && initialized_.insert(b.name).second) {
    auto* init = graph_.add_initializer();
    init->set_name(b.name);
    fill_tensor(*init, it->second);
  }
  return b.name;
}

bool Converter::is_none(const Value* v) const {
  const Bound& b = bound(v);
  return b.kind == Bound::Kind::Constant && b.constant.isNone();
}

bool Converter::is_constant(const Value* v) const { return bound(v).kind == Bound::Kind::Constant; }

const c10::IValue& Converter::constant(const Value* v) const {
  const Bound& b = bound(v);
  if (b.kind != Bound::Kind::Constant) fail("%" + v->debugName() + " must be a constant (it depends on the input)");
  return b.constant;
}

int64_t Converter::integer(const Value* v) const {
  const c10::IValue& c = constant(v);
  if (!c.isInt()) fail("%" + v->debugName() + " must be an int, not " + ivalue_text(c));
  return c.toInt();
}

double Converter::number(const Value* v) const {
  const c10::IValue& c = constant(v);
  if (c.isDouble()) return c.toDouble();
  if (c.isInt()) return double(c.toInt());
  if (c.isBool()) return c.toBool() ? 1.0 : 0.0;
  fail("%" + v->debugName() + " must be a number, not " + ivalue_text(c));
}

bool Converter::boolean(const Value* v) const {
  const c10::IValue& c = constant(v);
  if (!c.isBool()) fail("%" + v->debugName() + " must be a bool, not " + ivalue_text(c));
  return c.toBool();
}

std::vector<int64_t> Converter::ints(const Value* v) const {
  const c10::IValue& c = constant(v);
  if (c.isInt()) return {c.toInt()};
  if (!c.isList()) fail("%" + v->debugName() + " must be a list of ints, not " + ivalue_text(c));
  std::vector<int64_t> out;
  for (const c10::IValue& item : c.toListRef()) {
    if (!item.isInt()) fail("%" + v->debugName() + " must be a list of ints, not " + ivalue_text(c));
    out.push_back(item.toInt());
  }
  return out;
}

const std::vector<std::string>& Converter::tensors(const Value* v) const {
  const Bound& b = bound(v);
  if (b.kind != Bound::Kind::TensorList) fail("%" + v->debugName() + " must be a list of tensors");
  return b.names;
}

// A parameter's or a constant's own sizes, else the trace's (outputs not yet bound too).
std::vector<int64_t> Converter::shape(const Value* v) const {
  if (const at::Tensor* t = known_tensor(v)) return t->sizes().vec();
  auto type = v->type()->cast<c10::TensorType>();
  auto sizes = type ? type->sizes().concrete_sizes() : c10::nullopt;
  if (!sizes) fail("the trace recorded no shape for %" + v->debugName());
  return *sizes;
}

at::ScalarType Converter::dtype(const Value* v) const {
  if (const at::Tensor* t = known_tensor(v)) return t->scalar_type();
  auto type = v->type()->cast<c10::TensorType>();
  auto scalar_type = type ? type->scalarType() : c10::nullopt;
  if (!scalar_type) fail("the trace recorded no dtype for %" + v->debugName());
  return *scalar_type;
}

const at::Tensor* Converter::known_tensor(const Value* v) const {
  auto it = values_.find(v);
  if (it == values_.end()) return nullptr;
  const Bound& b = it->second;
  if (b.kind == Bound::Kind::Constant && b.constant.isTensor()) return &b.constant.toTensor();
  auto param = state_.find(b.name);
  if (b.kind == Bound::Kind::Tensor && param != state_.end()) return &param->second;
  return nullptr;
}

std::string Converter::fresh_name(const std::string& op) {
  for (;;) {
    std::string name = op + "_" + std::to_string(counters_[op]++);
    if (!state_.count(name + "_output_0")) return name;
  }
}

onnx::NodeProto& Converter::add(const std::string& op, const std::vector<std::string>& inputs) {
  onnx::NodeProto& node = *graph_.add_node();
  const std::string name = fresh_name(op);
  node.set_name(name);
  node.set_op_type(op);
  for (const auto& in : inputs) node.add_input(in);
  node.add_output(name + "_output_0");
  return node;
}

std::string Converter::constant_tensor(const at::Tensor& value) {
  onnx::NodeProto& node = add("Constant", {});
  onnx::AttributeProto& attr = *node.add_attribute();
  attr.set_name("value");
  attr.set_type(onnx::AttributeProto::TENSOR);
  fill_tensor(*attr.mutable_t(), value);
  return node.output(0);
}

std::string Converter::scalar(double value, at::ScalarType type) {
  return constant_tensor(at::scalar_tensor(value, at::TensorOptions().dtype(at::kDouble)).to(type));
}

std::string Converter::int64s(const std::vector<int64_t>& values) {
  return constant_tensor(at::tensor(values, at::TensorOptions().dtype(at::kLong)));
}

void Converter::bind(const Value* v, const std::string& onnx_name) {
  Bound b;
  b.kind = Bound::Kind::Tensor;
  b.name = onnx_name;
  values_[v] = std::move(b);
}

void Converter::bind_constant(const Value* v, c10::IValue value) {
  Bound b;
  b.kind = Bound::Kind::Constant;
  b.constant = std::move(value);
  values_[v] = std::move(b);
}

void Converter::bind_module(const Value* v, const std::string& prefix) {
  Bound b;
  b.kind = Bound::Kind::Module;
  b.name = prefix;
  values_[v] = std::move(b);
}

void Converter::convert(const Node& node, int index) {
  node_ = &node;
  node_index_ = index;
  const std::string kind = node.kind().toQualString();
  if (node.kind().is_prim()) {
    convert_prim(node);
    return;
  }
  auto it = op_conversions().find(kind);
  if (it == op_conversions().end())
    fail("no conversion to ONNX for this operator (docs/guides/export.md, \"ONNX\", lists those there are)");
  it->second(*this, node);
}

void Converter::convert_prim(const Node& node) {
  const std::string kind = node.kind().toQualString();
  if (kind == "prim::Constant") {
    auto value = torch::jit::toIValue(node.output());
    if (!value) fail("a constant of an unsupported type");
    bind_constant(node.output(), *value);
  } else if (kind == "prim::GetAttr") {
    convert_get_attr(node);
  } else if (kind == "prim::ListConstruct") {
    convert_list(node);
  } else if (kind == "prim::NumToTensor") {  // a size as a 0-d tensor: the same int64 value in ONNX
    const Bound& in = bound(node.input(0));
    values_[node.output()] = in;
  } else {
    fail("no conversion to ONNX for this operator (docs/guides/export.md, \"ONNX\", lists those there are)");
  }
}

// self.layer1 -> the module "layer1."; self.layer1.0.conv1.weight -> the initializer of that name.
void Converter::convert_get_attr(const Node& node) {
  const Bound& owner = bound(node.input(0));
  if (owner.kind != Bound::Kind::Module) fail("an attribute of something other than a module");
  const std::string name = owner.name + node.s(c10::Symbol::attr("name"));
  Bound b;
  if (node.output()->type()->cast<c10::ClassType>()) {
    b.kind = Bound::Kind::Module;
    b.name = name + ".";
  } else if (state_.count(name)) {
    b.kind = Bound::Kind::Tensor;
    b.name = name;
  } else {
    fail("the module attribute '" + name + "' is neither a submodule, a parameter nor a buffer");
  }
  values_[node.output()] = std::move(b);
}

// Constant lists stay constants; a list of tensors is cat's input; an int list with sizes read
// from the input (x.view(x.size(0), -1) as Python's tracer records it) is a 1-D int64 tensor.
void Converter::convert_list(const Node& node) {
  auto list_type = node.output()->type()->cast<c10::ListType>();
  if (list_type && list_type->getElementType()->cast<c10::TensorType>()) {
    Bound b;
    b.kind = Bound::Kind::TensorList;
    for (const Value* in : node.inputs()) b.names.push_back(tensor(in));
    values_[node.output()] = std::move(b);
    return;
  }
  bool all_constant = true;
  for (const Value* in : node.inputs()) all_constant = all_constant && is_constant(in);
  if (all_constant) {
    c10::impl::GenericList items(list_type ? list_type->getElementType() : c10::AnyType::get());
    for (const Value* in : node.inputs()) items.push_back(constant(in));
    bind_constant(node.output(), c10::IValue(items));
    return;
  }
  std::vector<std::string> parts;
  for (const Value* in : node.inputs()) {
    if (is_constant(in)) parts.push_back(int64s({integer(in)}));
    else parts.push_back(add("Reshape", {tensor(in), int64s({1})}).output(0));  // 0-d or [1] -> [1]
  }
  onnx::NodeProto& concat = add("Concat", parts);
  set_int(concat, "axis", 0);
  bind(node.output(), concat.output(0));
}

void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
}

void set_float(onnx::NodeProto& node, const std::string& name, double value) {
  auto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(float(value));
}

void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}

void set_string(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
}

int32_t onnx_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return onnx::TensorProto::FLOAT;
    case at::kDouble: return onnx::TensorProto::DOUBLE;
    case at::kHalf: return onnx::TensorProto::FLOAT16;
    case at::kBFloat16: return onnx::TensorProto::BFLOAT16;
    case at::kLong: return onnx::TensorProto::INT64;
    case at::kInt: return onnx::TensorProto::INT32;
    case at::kShort: return onnx::TensorProto::INT16;
    case at::kChar: return onnx::TensorProto::INT8;
    case at::kByte: return onnx::TensorProto::UINT8;
    case at::kBool: return onnx::TensorProto::BOOL;
    default: throw RecipeError(std::string("ONNX export: no ONNX element type for ") + c10::toString(type));
  }
}

void fill_tensor(onnx::TensorProto& proto, const at::Tensor& value) {
  at::Tensor t = value.detach().to(at::kCPU).contiguous();
  proto.set_data_type(onnx_dtype(t.scalar_type()));
  for (int64_t d : t.sizes()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size()));
}

}  // namespace trainrun::onnx_export
