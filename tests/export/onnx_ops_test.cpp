// runner/export/onnx.h's conversions beyond the registered models (onnx_reference.h checks each
// file): the operators the next models need in small nets, a size read at run time that keeps the
// batch free, and the errors (an operator without a conversion, an opset outside the range).
#include "onnx_reference.h"

#include "support/errors.h"

namespace trainrun::onnx_reference {
namespace {

namespace fs = std::filesystem;

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
}  // namespace trainrun::onnx_reference
