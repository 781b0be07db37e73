// runner/export/onnx.h against the real readers (onnx_reference.h): python3-onnx's checker
// (full_check) on every registered model's structure (tests/support/model_variants.h), and onnxruntime (Debian 13's python3-onnxruntime) running
// each on a batch of 2 (traced with 1) against the model's own eval forward. The operators the
// next models need, a size read at run time and the errors: onnx_ops_test.cpp.
#include "onnx_reference.h"
#include "support/model_variants.h"

#include <cstdio>
#include <map>
#include <set>

namespace trainrun::onnx_reference {
namespace {

// A registered model with its schema's defaults (10 classes), as the recipe engine builds it.
std::shared_ptr<Classifier> make_registered(const std::string& name) {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg;
  for (auto& p : entry.schema.params())
    cfg[p.name] = p.name == "num_classes" ? YAML::Node(10) : YAML::Clone(p.default_value);
  return entry.make(Config(cfg, "model"));
}

// Re-estimates every BatchNorm2d's running statistics on `x` (momentum 1: the batch's own), the
// random weights and biases kept. With random statistics alone a deep ResNet's activations grow
// block by block, each residual branch adding its variance: torchvision's resnet152 so randomised
// gives logits up to 9.2e7 (resnet101 2.3e4, resnet50 60; python3-torch 1.13, randn input), where
// fp32's spacing is 8 and onnxruntime's other summation order differed by 72 (resnet101: 0.012) on
// Debian 13. Calibrated, each BN normalises what reaches it and the logits are O(1) (1.2-1.4 for
// those three), so the absolute 1e-4 is a claim about the conversion for every model.
void calibrate_batch_norms(Classifier& model, const at::Tensor& x) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<torch::nn::BatchNorm2dImpl*, c10::optional<double>>> saved;
  for (auto& m : model.modules(/*include_self=*/true)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
      saved.emplace_back(bn, bn->options.momentum());
      bn->options.momentum(1.0);
    }
  }
  model.train();
  model.forward(x);
  model.eval();
  for (auto& [bn, momentum] : saved) bn->options.momentum(momentum);
}

// Every registered model exported, as each of the two tests below sees it (each test is its own
// process under ctest): the checker test reads the files only; the onnxruntime test also runs them.
struct Exported {
  json report;
  std::vector<int64_t> input_size;
  std::set<std::string> state_names, float_state_names;
};

std::map<std::string, Exported> export_every_model(bool run_onnxruntime) {
  std::map<std::string, Exported> out;
  for (const std::string& name : test::every_model_pass(Registry<Classifier>::instance().names())) {
    torch::manual_seed(0);
    auto model = make_registered(name);
    randomize_norms(*model);
    Exported e;
    e.input_size = model->input_config().input_size;
    const at::Tensor x = batch_of_two(e.input_size);
    calibrate_batch_norms(*model, x);
    for (const auto& t : model->named_parameters()) e.state_names.insert(t.key());
    for (const auto& t : model->named_buffers()) e.state_names.insert(t.key());
    for (const auto& t : model->named_parameters()) e.float_state_names.insert(t.key());
    for (const auto& t : model->named_buffers())
      if (t.value().is_floating_point()) e.float_state_names.insert(t.key());
    test::TempDir dir;
    OnnxOptions options;
    options.metadata = {{"trainrun.model", name}, {"labels", "[\"a\", \"b\"]"}};
    write_onnx(trace_classifier(*model, e.input_size), e.input_size, dir / "model.onnx", options);
    if (!run_onnxruntime) {
      e.report = run_onnx_check(dir / "model.onnx", dir);
    } else {
      // The deep ResNets amplify fp32 rounding (onnxruntime's MLAS kernels sum in another order
      // than LibTorch's): both fp32 evaluations are also measured against the model in float64,
      // as a claim about the conversion.
      torch::NoGradGuard no_grad;
      model->eval();
      const at::Tensor y32 = model->forward(x);
      model->to(torch::kFloat64);
      const at::Tensor y64 = model->forward(x.to(torch::kFloat64));
      e.report = run_onnx_check(dir / "model.onnx", dir, x, y32, y64);
      e.report["max_abs_logit"] = y32.abs().max().item<double>();
      e.report["libtorch_vs_exact"] = (y32.to(torch::kFloat64) - y64).abs().max().item<double>();
    }
    out[name] = std::move(e);
  }
  return out;
}

// One export of every registered model, checked twice: by onnx's checker (every stack), and, where
// python3-onnxruntime is installed (Debian 13), run by onnxruntime against the eval forward. One
// test, so each model is traced and exported once (two tests were two processes exporting all).
TEST(OnnxExport, TheCheckerAndOnnxruntimeAcceptEveryRegisteredModel) {
  const bool ort = test::run(std::string(test::kPython) + " -c 'import onnxruntime'").code == 0;
  const auto exported = export_every_model(/*run_onnxruntime=*/ort);
  ASSERT_GE(exported.size(), 3u);  // basicnet, resnet18, resnet50d at least
  for (const auto& [name, e] : exported) {
    SCOPED_TRACE(name);
    const json& r = e.report;
    ASSERT_TRUE(r.contains("checker"));
    EXPECT_EQ(r["checker"], "ok");
    EXPECT_EQ(r["opset_import"], json({{"", 17}}));  // the default, as README states
    EXPECT_EQ(r["ir_version"], 8);
    EXPECT_EQ(r["metadata"], json({{"trainrun.model", name}, {"labels", "[\"a\", \"b\"]"}}));
    json input_dims = json::array({"batch"});
    for (int64_t d : e.input_size) input_dims.push_back(d);
    EXPECT_EQ(r["inputs"], json::array({json::array({"input", input_dims})}));
    EXPECT_EQ(r["outputs"], json::array({json::array({"logits", json::array({"batch", 10})})}));
    // The weights are initializers under their state_dict names, each floating-point one there.
    std::set<std::string> initializers = r["initializers"].get<std::set<std::string>>();
    for (const auto& i : initializers) EXPECT_TRUE(e.state_names.count(i)) << i << " is not in the state_dict";
    for (const auto& s : e.float_state_names) EXPECT_TRUE(initializers.count(s)) << s << " is not an initializer";
    std::printf("[onnx] %s: onnx %s checker ok, %zu initializers, ops %s\n", name.c_str(),
                r["onnx"].get<std::string>().c_str(), initializers.size(), r["ops"].dump().c_str());
    if (!ort) continue;
    ASSERT_TRUE(r.contains("onnxruntime")) << r.dump();
    ASSERT_FALSE(r["onnxruntime"].is_null()) << r["why"];
    EXPECT_EQ(r["batch"], 2);
    EXPECT_EQ(r["logits_shape"], json::array({2, 10}));
    const double diff = r["max_abs_diff"], ort_vs_exact = r["max_abs_diff_vs_exact"],
                 libtorch_vs_exact = r["libtorch_vs_exact"];
    std::printf("[onnx] %s: onnxruntime %s, batch 2, max |logits - eval forward| %.3g%s (max |logit| %.3g); "
                "against float64: onnxruntime %.3g, LibTorch fp32 %.3g\n",
                name.c_str(), r["onnxruntime"].get<std::string>().c_str(), diff,
                r.contains("max_abs_diff_unoptimized")
                    ? (", without ORT's graph optimisations " + std::to_string(r["max_abs_diff_unoptimized"].get<double>())).c_str()
                    : "",
                r["max_abs_logit"].get<double>(), ort_vs_exact, libtorch_vs_exact);
    // Within 1e-4 of LibTorch's logits, or, where the network itself amplifies fp32 rounding that
    // far, no further from the float64 result than twice LibTorch's own fp32 forward is.
    if (diff > 1e-4) {
      EXPECT_LE(ort_vs_exact, 2 * libtorch_vs_exact) << "diff " << diff;
    }
  }
  if (!ort) std::printf("[onnx] onnxruntime: not installed (Debian 13 has python3-onnxruntime; Debian 12 does not)\n");
}

}  // namespace
}  // namespace trainrun::onnx_reference
