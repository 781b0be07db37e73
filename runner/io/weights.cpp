#include "runner/io/weights.h"

#include <torch/torch.h>

#include <fnmatch.h>

#include <map>

namespace trainrun {

namespace {

void append_own(const torch::nn::Module& m, const std::string& prefix, TensorList& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) out.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : m.named_buffers(/*recurse=*/false)) out.emplace_back(prefix + b.key(), b.value());
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

// PyTorch's order: a module's own parameters, then its own buffers, then its children, depth first.
TensorList state_dict(const torch::nn::Module& module) {
  TensorList out;
  append_own(module, "", out);
  for (const auto& m : module.named_modules("", /*include_self=*/false)) append_own(*m.value(), m.key() + ".", out);
  return out;
}

namespace {

std::string shape(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string list(const std::vector<std::string>& items, std::size_t most = 8) {
  std::string s;
  for (std::size_t i = 0; i < items.size() && i < most; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > most) s += ", ... (" + std::to_string(items.size()) + " in all)";
  return s;
}

}  // namespace

LoadReport load_state_dict(torch::nn::Module& module, const TensorList& tensors, const std::string& source,
                           const std::string& classifier_glob) {
  std::map<std::string, at::Tensor> given(tensors.begin(), tensors.end());
  std::vector<std::string> missing, mismatched, unexpected, wrong_type;
  LoadReport report;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;
  std::vector<at::Tensor> zeroed;
  for (auto& [name, target] : state_dict(module)) {
    auto it = given.find(name);
    if (it == given.end()) {
      // As BatchNorm's _load_from_state_dict for a state dict without version metadata (every
      // safetensors file; torchvision's own checkpoints predate the buffer): count from 0.
      if (ends_with(name, ".num_batches_tracked")) zeroed.push_back(target);
      else missing.push_back(name);
      continue;
    }
    if (it->second.sizes() != target.sizes()) {
      bool head = !classifier_glob.empty() && fnmatch(classifier_glob.c_str(), name.c_str(), 0) == 0;
      if (head) report.reinitialised.push_back(name + " " + shape(it->second) + " -> " + shape(target));
      else mismatched.push_back(name + " (file " + shape(it->second) + ", model " + shape(target) + ")");
    } else if (it->second.is_floating_point() != target.is_floating_point()) {
      // F16/BF16/F64 convert to the model's dtype as load_state_dict's copy_ does; integers
      // where the model has floats (or the reverse) are not weights of this model.
      wrong_type.push_back(name + " (file " + safetensors_dtype(it->second.scalar_type()) + ", model " +
                           safetensors_dtype(target.scalar_type()) + ")");
    } else {
      copies.emplace_back(target, it->second);
    }
    given.erase(it);
  }
  for (auto& [name, _] : given) unexpected.push_back(name);
  if (!missing.empty() || !mismatched.empty() || !unexpected.empty() || !wrong_type.empty()) {
    std::string msg = source + ": weights do not match the model:";
    if (!missing.empty()) msg += " missing keys: " + list(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected keys: " + list(unexpected) + ";";
    if (!mismatched.empty()) msg += " wrong shapes: " + list(mismatched) + ";";
    if (!wrong_type.empty()) msg += " wrong dtypes: " + list(wrong_type) + ";";
    msg.pop_back();
    throw WeightsError(msg);
  }
  torch::NoGradGuard no_grad;
  for (auto& [target, value] : copies) target.copy_(value.to(target.scalar_type()));
  for (auto& target : zeroed) target.zero_();
  return report;
}

}  // namespace trainrun
