// The ONNX tests' harness: a model's file checked by the real readers (tests/py/onnx_check.py:
// python3-onnx's checker, and onnxruntime where it is installed) against the model's own eval
// forward on a batch of 2 (the trace has 1).
#pragma once

#include "components/models/model.h"
#include "runner/export/onnx.h"
#include "runner/export/torchscript.h"

#include "test_util.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <set>

namespace trainrun::onnx_reference {

using nlohmann::json;

// Every normalisation layer with running statistics (BatchNorm of any rank): its affine and
// statistics away from 1/0, so that a mix-up of weight/bias/mean/var changes the logits.
inline void randomize_norms(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& m : model.modules(/*include_self=*/true)) {
    auto buffers = m->named_buffers(/*recurse=*/false);
    auto params = m->named_parameters(/*recurse=*/false);
    if (!buffers.contains("running_mean")) continue;
    buffers["running_mean"].copy_(torch::randn_like(buffers["running_mean"]) * 0.1);
    buffers["running_var"].copy_(torch::rand_like(buffers["running_var"]) * 1.5 + 0.5);
    if (params.contains("weight")) params["weight"].copy_(torch::rand_like(params["weight"]) + 0.5);
    if (params.contains("bias")) params["bias"].copy_(torch::randn_like(params["bias"]) * 0.1);
  }
}

inline void write_floats(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
}

inline void write_doubles(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kDouble).contiguous();
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(double));
}

// onnx_check.py on the file `path` in `dir`: its JSON. Without `x`, what the file declares and the
// checker's verdict; with it, onnxruntime run on `x` and compared with `expected` (and, given,
// with `exact`: the same model's float64 logits).
inline json run_onnx_check(const std::string& path, const test::TempDir& dir, const at::Tensor& x = {},
                    const at::Tensor& expected = {}, const at::Tensor& exact = {}) {
  std::string args = " " + path;
  if (x.defined()) {
    write_floats(dir / "input.bin", x);
    write_floats(dir / "expected.bin", expected);
    args += " " + (dir / "input.bin") + " " + (dir / "expected.bin");
    if (exact.defined()) {
      write_doubles(dir / "exact.bin", exact);
      args += " " + (dir / "exact.bin");
    }
  }
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/onnx_check.py") + args);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out) : json::object();
}

inline json check_onnx(const std::string& path, const at::Tensor& x, const at::Tensor& expected, const test::TempDir& dir) {
  return run_onnx_check(path, dir, x, expected);
}

// A seeded batch of 2 (the trace has 1) of `input_size`.
inline at::Tensor batch_of_two(const std::vector<int64_t>& input_size) {
  std::vector<int64_t> shape{2};
  shape.insert(shape.end(), input_size.begin(), input_size.end());
  torch::manual_seed(7);
  return torch::randn(shape);
}

// Exports `model` traced at `input_size` and checks the file against its eval forward.
inline json export_and_check(Classifier& model, const std::vector<int64_t>& input_size, const OnnxOptions& options,
                      const test::TempDir& dir) {
  torch::jit::Module traced = trace_classifier(model, input_size);
  const std::string path = dir / "model.onnx";
  write_onnx(traced, input_size, path, options);
  const at::Tensor x = batch_of_two(input_size);
  torch::NoGradGuard no_grad;
  model.eval();
  const at::Tensor expected = model.forward(x);
  return check_onnx(path, x, expected, dir);
}

// The checker accepted the file, it holds `ops` (the conversions happened as written), and where
// onnxruntime ran it on the batch of 2 the logits are within `tolerance` of the eval forward's.
inline void expect_valid_and_equal(const json& r, const std::vector<std::string>& ops, const std::string& what,
                            double tolerance = 1e-4) {
  ASSERT_TRUE(r.contains("checker")) << r.dump();
  EXPECT_EQ(r["checker"], "ok");
  const std::set<std::string> has = r["ops"].get<std::set<std::string>>();
  for (const auto& op : ops) EXPECT_TRUE(has.count(op)) << op << " missing from " << r["ops"].dump();
  if (r["onnxruntime"].is_null()) {
    std::printf("[onnx] %s: checker ok; not run: %s\n", what.c_str(), r["why"].get<std::string>().c_str());
    return;
  }
  EXPECT_EQ(r["logits_shape"], json::array({2, 10}));
  const double diff = r["max_abs_diff"];
  std::printf("[onnx] %s: onnxruntime %s max |diff| %.3g\n", what.c_str(), r["onnxruntime"].get<std::string>().c_str(), diff);
  EXPECT_LE(diff, tolerance);
}

}  // namespace trainrun::onnx_reference
