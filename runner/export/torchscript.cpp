#include "runner/export/torchscript.h"

#include "components/models/model.h"
#include "support/durable_file.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/torch.h>

#include <memory>
#include <regex>
#include <sstream>

namespace trainrun {
namespace {

// "torch::nn::Conv2dImpl" -> "__torch__.torch.nn.Conv2dImpl": the class name Python prints for it.
c10::QualifiedName ts_class_name(const std::string& cpp_name) {
  std::string dotted = std::regex_replace(cpp_name, std::regex(R"(\(anonymous namespace\)::)"), "");
  dotted = std::regex_replace(dotted, std::regex("::"), ".");
  dotted = std::regex_replace(dotted, std::regex("[^A-Za-z0-9_.]"), "_");
  return c10::QualifiedName("__torch__." + dotted);
}

// A torch::jit::Module holding the very tensors of `module` (not copies) under the same names,
// children as submodules: the tracer maps each tensor the forward touches to its attribute.
torch::jit::Module mirror_module(const torch::nn::Module& module, const std::shared_ptr<torch::jit::CompilationUnit>& unit) {
  torch::jit::Module out(ts_class_name(module.name()), unit, /*shouldMangle=*/true);
  out.register_attribute("training", c10::BoolType::get(), false);
  for (const auto& p : module.named_parameters(/*recurse=*/false)) out.register_parameter(p.key(), p.value(), /*is_buffer=*/false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) out.register_buffer(b.key(), b.value());
  for (const auto& child : module.named_children()) out.register_module(child.key(), mirror_module(*child.value(), unit));
  return out;
}

}  // namespace

torch::jit::Module trace_classifier(Classifier& model, const std::vector<int64_t>& input_size) {
  const bool was_training = model.is_training();
  model.eval();
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module traced = mirror_module(model, unit);
  std::vector<int64_t> shape{1};
  shape.insert(shape.end(), input_size.begin(), input_size.end());
  // Any values do: the trace records operations, not numbers (the model has no data-dependent branch).
  at::Tensor example = torch::rand(shape, torch::TensorOptions().dtype(torch::kFloat32));
  torch::jit::Stack outputs;
  try {
    torch::NoGradGuard no_grad;
    auto forward = [&model](torch::jit::Stack inputs) -> torch::jit::Stack { return {model.forward(inputs.at(0).toTensor())}; };
    auto traced_graph = torch::jit::tracer::trace({example}, forward, [](const at::Tensor&) { return std::string(); },
                                                  /*strict=*/true, /*force_outplace=*/false, &traced);
    auto graph = traced_graph.first->graph;
    auto method = unit->create_function(c10::QualifiedName(*traced.type()->name(), "forward"), graph);
    traced.type()->addMethod(method);
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return traced;
}

void save_torchscript(const torch::jit::Module& module, const std::string& path,
                      const std::map<std::string, std::string>& extra_files) {
  std::ostringstream archive;
  module.save(archive, torch::jit::ExtraFilesMap(extra_files.begin(), extra_files.end()));
  write_file_atomic(path, archive.str());
}

}  // namespace trainrun
