// runner/export/onnx.h against the real readers (tests/py/onnx_check.py): python3-onnx's checker
// (full_check) on every registered model, and onnxruntime (Debian 13's python3-onnxruntime) running
// each on a batch of 2 (traced with 1) against the model's own eval forward; then the operators the
// next models need, a size read at run time, and the errors.
#include "components/models/model.h"
#include "runner/export/onnx.h"
#include "runner/export/torchscript.h"
#include "support/errors.h"

#include "test_util.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A registered model with its schema's defaults (10 classes), as the recipe engine builds it.
std::shared_ptr<Classifier> make_registered(const std::string& name) {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg;
  for (auto& p : entry.schema.params())
    cfg[p.name] = p.name == "num_classes" ? YAML::Node(10) : YAML::Clone(p.default_value);
  return entry.make(Config(cfg, "model"));
}

// Every normalisation layer with running statistics (BatchNorm of any rank): its affine and
// statistics away from 1/0, so that a mix-up of weight/bias/mean/var changes the logits.
void randomize_norms(torch::nn::Module& model) {
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

void write_floats(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
}

void write_doubles(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kDouble).contiguous();
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(double));
}

// onnx_check.py on the file `path` in `dir`: its JSON. Without `x`, what the file declares and the
// checker's verdict; with it, onnxruntime run on `x` and compared with `expected` (and, given,
// with `exact`: the same model's float64 logits).
json run_onnx_check(const std::string& path, const test::TempDir& dir, const at::Tensor& x = {},
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

json check_onnx(const std::string& path, const at::Tensor& x, const at::Tensor& expected, const test::TempDir& dir) {
  return run_onnx_check(path, dir, x, expected);
}

// A seeded batch of 2 (the trace has 1) of `input_size`.
at::Tensor batch_of_two(const std::vector<int64_t>& input_size) {
  std::vector<int64_t> shape{2};
  shape.insert(shape.end(), input_size.begin(), input_size.end());
  torch::manual_seed(7);
  return torch::randn(shape);
}

// Exports `model` traced at `input_size` and checks the file against its eval forward.
json export_and_check(Classifier& model, const std::vector<int64_t>& input_size, const OnnxOptions& options,
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
void expect_valid_and_equal(const json& r, const std::vector<std::string>& ops, const std::string& what,
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

// Every registered model exported, as each of the two tests below sees it (each test is its own
// process under ctest): the checker test reads the files only; the onnxruntime test also runs them.
struct Exported {
  json report;
  std::vector<int64_t> input_size;
  std::set<std::string> state_names, float_state_names;
};

std::map<std::string, Exported> export_every_model(bool run_onnxruntime) {
  std::map<std::string, Exported> out;
  for (const std::string& name : Registry<Classifier>::instance().names()) {
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

// A Classifier for the tests below: its input size and nothing else a recipe would need.
class TestNet : public Classifier {
 public:
  explicit TestNet(std::vector<int64_t> input_size) : input_size_(std::move(input_size)) {}
  InputConfig input_config() const override {
    InputConfig in;
    in.input_size = input_size_;
    return in;
  }
  std::string classifier_pattern() const override { return ""; }

 private:
  std::vector<int64_t> input_size_;
};

// The operators issue 31's models (ConvNeXt, ViT, EfficientNet, MobileNetV3) trace to, in one
// small net: grouped dilated conv, BatchNorm, hardswish/hardsigmoid/silu/sigmoid/gelu (exact and
// tanh), pooling with ceil_mode (windows past the padding, with and without count_include_pad),
// adaptive pooling to 3x3 and 1x1, mean, LayerNorm, flatten/transpose/permute/view, matmul,
// softmax, linear, addmm, arithmetic with numbers and alpha, dropout and the identities.
class OpZoo : public TestNet {
 public:
  OpZoo()
      : TestNet({3, 16, 16}),
        conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 3).groups(3).dilation(2).padding(2)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(6))),
        mix(register_module("mix", torch::nn::Conv2d(torch::nn::Conv2dOptions(18, 8, 1)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})))),
        proj(register_module("proj", torch::nn::Linear(8, 8))) {
    head_w = register_parameter("head_w", torch::randn({10, 8}) * 0.3);
    head_b = register_parameter("head_b", torch::randn({10}) * 0.1);
  }

  at::Tensor forward(const at::Tensor& input) override {
    namespace F = torch::nn::functional;
    at::Tensor x = torch::hardswish(bn(conv(input)));  // [1, 6, 16, 16]
    auto pool = F::AvgPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true);
    at::Tensor y = torch::cat({F::avg_pool2d(x, pool.count_include_pad(true)), F::avg_pool2d(x, pool.count_include_pad(false)),
                               F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true))},
                              1);  // [1, 18, 9, 9]: ceil_mode's last window reaches past the padding
    y = torch::silu(mix(y));
    y = y * torch::sigmoid(y.mean({2, 3}, /*keepdim=*/true)) + torch::hardsigmoid(y) / 2.0;
    y = torch::sub(y, torch::relu(y), /*alpha=*/0.5);
    y = F::adaptive_avg_pool2d(y, F::AdaptiveAvgPool2dFuncOptions({3, 3}));  // [1, 8, 3, 3]
    at::Tensor t = F::gelu(norm(y.flatten(2).transpose(1, 2)));              // [1, 9, 8]
    at::Tensor k = torch::gelu(proj(t), "tanh");
    at::Tensor attention = torch::softmax(torch::matmul(t, k.transpose(-2, -1)) * 0.125, -1);
    t = torch::matmul(attention, t) + 1.0;
    at::Tensor grid = t.permute({0, 2, 1}).contiguous().view({t.size(0), 8, 3, 3});
    at::Tensor pooled = F::adaptive_avg_pool2d(grid, F::AdaptiveAvgPool2dFuncOptions({1, 1})).flatten(1);
    pooled = torch::dropout(pooled, 0.5, is_training()).clone().detach().to(torch::kFloat);
    pooled = pooled / (torch::sigmoid(pooled) + 1.0);
    at::Tensor logits = torch::addmm(head_b, pooled, head_w.t());
    return torch::log_softmax(logits, 1) - torch::rsub(torch::softmax(logits, 1), 1.0);
  }


  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Conv2d mix;
  torch::nn::LayerNorm norm;
  torch::nn::Linear proj;
  at::Tensor head_w, head_b;
};

TEST(OnnxExport, TheOperatorsOfTheNextModels) {
  std::vector<int64_t> opsets{17};
  if (onnx_max_opset() > 17) opsets.push_back(onnx_max_opset());  // Gelu and ReduceMean's axes input
  for (int64_t opset : opsets) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    torch::manual_seed(3);
    auto zoo = std::make_shared<OpZoo>();
    randomize_norms(*zoo);
    test::TempDir dir;
    OnnxOptions options;
    options.opset = opset;
    const json r = export_and_check(*zoo, zoo->input_config().input_size, options, dir);
    expect_valid_and_equal(r, {"Conv", "BatchNormalization", "HardSwish", "AveragePool", "Pad", "MaxPool", "Concat",
                               "Sigmoid", "HardSigmoid", "ReduceMean", "LayerNormalization", "Transpose", "MatMul",
                               "Softmax", "LogSoftmax", "Reshape", "GlobalAveragePool", "Gemm", "Sub", "Div", "Mul",
                               "Add", "Relu", opset < 20 ? "Erf" : "Gelu"},  // exact gelu: Erf below opset 20
                           "op zoo, opset " + std::to_string(opset));
    EXPECT_EQ(r["opset_import"], json({{"", opset}}));
  }
}

// The other conversions: padding='same', a transposed convolution, leaky_relu, hardtanh, relu6,
// tanh, a 0-d constant tensor operand, mean over everything, adaptive pooling to 2x2, unsqueeze/squeeze, select, slice, cat on
// a negative dim, mm, a dtype round trip (Cast) and type_as.
class OpZoo2 : public TestNet {
 public:
  OpZoo2()
      : TestNet({4, 8, 8}),
        same(register_module("same", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 4, 3).padding(torch::kSame).dilation(2)))),
        up(register_module("up", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(4, 4, 3).stride(2).padding(1).output_padding(1)))) {
    head = register_parameter("head", torch::randn({20, 10}) * 0.3);
  }

  at::Tensor forward(const at::Tensor& input) override {
    namespace F = torch::nn::functional;
    at::Tensor x = torch::leaky_relu(same(input), 0.1);  // [1, 4, 8, 8]
    at::Tensor u = torch::tanh(F::hardtanh(up(x), F::HardtanhFuncOptions().min_val(-0.5).max_val(0.8))) * 0.5;  // [1, 4, 16, 16]
    u = torch::relu6(u * torch::tensor(10.0));  // a 0-d tensor made in forward: a constant of the trace
    at::Tensor f = F::adaptive_avg_pool2d(u, F::AdaptiveAvgPool2dFuncOptions({2, 2})).flatten(1);  // [1, 16]
    f = f.unsqueeze(1).squeeze(1).squeeze(1);  // the second squeeze: dim 1 is 16, a no-op
    at::Tensor h = torch::cat({f, f.slice(1, 2, 14, 3)}, -1);  // [1, 20]
    h = h.to(torch::kDouble).to(torch::kFloat).type_as(f);
    return torch::mm(h, head) + u.mean() + f.select(1, 3).unsqueeze(1);
  }


  torch::nn::Conv2d same;
  torch::nn::ConvTranspose2d up;
  at::Tensor head;
};

TEST(OnnxExport, TheOtherConversions) {
  torch::manual_seed(4);
  auto zoo = std::make_shared<OpZoo2>();
  test::TempDir dir;
  expect_valid_and_equal(export_and_check(*zoo, zoo->input_config().input_size, {}, dir),
                         {"Conv", "ConvTranspose", "LeakyRelu", "Clip", "Tanh", "ReduceMean", "AveragePool",
                          "Unsqueeze", "Squeeze", "Slice", "Gather", "Concat", "Cast", "MatMul"},
                         "op zoo 2");
}

// An operator without a conversion: one line naming it and its node, and no file.
class WithCumsum : public TestNet {
 public:
  WithCumsum() : TestNet({3, 2, 2}), fc(register_module("fc", torch::nn::Linear(12, 10))) {}
  at::Tensor forward(const at::Tensor& input) override { return fc(torch::cumsum(input.flatten(1), 1)); }
  torch::nn::Linear fc;
};

TEST(OnnxExport, AnOperatorWithoutAConversionIsOneLineNamingIt) {
  WithCumsum model;
  test::TempDir dir;
  torch::jit::Module traced = trace_classifier(model, {3, 2, 2});
  const std::string error = test::error_of<RecipeError>([&] { write_onnx(traced, {3, 2, 2}, dir / "m.onnx", {}); });
  std::printf("[onnx] %s\n", error.c_str());
  EXPECT_NE(error.find("ONNX export: aten::cumsum (node "), std::string::npos) << error;
  EXPECT_NE(error.find("= aten::cumsum(%"), std::string::npos) << error;
  EXPECT_NE(error.find("no conversion to ONNX"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir / "m.onnx"));
  EXPECT_FALSE(fs::exists(dir / "m.onnx.tmp"));
}

TEST(OnnxExport, AnOpsetOutsideTheSupportedRangeIsRefused) {
  WithCumsum model;
  torch::jit::Module traced = trace_classifier(model, {3, 2, 2});
  test::TempDir dir;
  OnnxOptions options;
  options.opset = 16;
  const std::string error = test::error_of<RecipeError>([&] { write_onnx(traced, {3, 2, 2}, dir / "m.onnx", options); });
  EXPECT_EQ(error, "ONNX export: opset 16 (this build writes 17 to " + std::to_string(onnx_max_opset()) + ")");
  EXPECT_FALSE(fs::exists(dir / "m.onnx"));
}

// x.view(x.size(0), -1) as Python's tracer records it (aten::size, prim::NumToTensor, aten::Int,
// prim::ListConstruct), then a linear layer: the C++ tracer sees sizes as numbers, so the graph
// is written here as a traced module's would be.
TEST(OnnxExport, ASizeReadAtRunTimeKeepsTheBatchFree) {
  using torch::jit::Value;
  torch::manual_seed(5);
  torch::nn::Linear fc(48, 10);
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module module(c10::QualifiedName("__torch__.SizeNet"), unit, /*shouldMangle=*/true);
  module.register_module("fc", torch::jit::Module(c10::QualifiedName("__torch__.Linear"), unit, true));
  module.attr("fc").toModule().register_parameter("weight", fc->weight, false);
  module.attr("fc").toModule().register_parameter("bias", fc->bias, false);
  auto graph = std::make_shared<torch::jit::Graph>();
  Value* self = graph->addInput("self")->setType(module.type());
  Value* x = graph->addInput("input")->setType(c10::TensorType::create(torch::zeros({1, 3, 4, 4})));
  Value* size = graph->insert(c10::Symbol::fromQualString("aten::size"), {x, 0});
  Value* as_tensor = graph->insert(c10::Symbol::fromQualString("prim::NumToTensor"), {size});
  Value* batch = graph->insert(c10::Symbol::fromQualString("aten::Int"), {as_tensor});
  Value* shape = graph->insertNode(graph->createList(c10::IntType::get(), {batch, graph->insertConstant(-1)}))->output();
  Value* flat = graph->insert(c10::Symbol::fromQualString("aten::view"), {x, shape});
  flat->setType(c10::TensorType::create(torch::zeros({1, 48})));
  Value* linear = graph->insertGetAttr(self, "fc");
  Value* y = graph->insert(c10::Symbol::fromQualString("aten::linear"),
                           {flat, graph->insertGetAttr(linear, "weight"), graph->insertGetAttr(linear, "bias")});
  y->setType(c10::TensorType::create(torch::zeros({1, 10})));
  graph->registerOutput(y);
  module.type()->addMethod(unit->create_function(c10::QualifiedName(*module.type()->name(), "forward"), graph));

  test::TempDir dir;
  write_onnx(module, {3, 4, 4}, dir / "model.onnx", {});
  const at::Tensor input = batch_of_two({3, 4, 4});
  const json r = check_onnx(dir / "model.onnx", input, torch::linear(input.view({2, -1}), fc->weight, fc->bias).detach(), dir);
  expect_valid_and_equal(r, {"Shape", "Gather", "Concat", "Reshape", "Gemm"}, "x.view(x.size(0), -1)", 1e-5);
  EXPECT_EQ(r["initializers"], json::array({"fc.weight", "fc.bias"}));
}

}  // namespace
}  // namespace trainrun
