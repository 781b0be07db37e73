// TorchScript from C++ (runner/export/torchscript.h, `trainrun export`, `predict --model`), read
// with the real readers: python3-torch's torch.jit.load and LibTorch's torch::jit::load. Every
// registered model's structure (tests/support/model_variants.h) traces and runs in both with the model's own outputs; a trained model exported
// by the CLI classifies image files alone (predict --model, and Python with torchvision's
// transforms built from the file's preprocess.json) with the logits `trainrun predict` gives.
#include "components/data/image.h"
#include "components/models/model.h"
#include "runner/export/torchscript.h"
#include "support/safetensors.h"

#include "support/model_variants.h"
#include "test_util.h"

#include <torch/csrc/jit/serialization/import.h>
#include <torch/torch.h>

#include <set>

namespace trainrun {
namespace {

using json = nlohmann::json;

// A registered model with its schema's defaults and 7 classes, BatchNorm away from its init.
std::shared_ptr<Classifier> export_test_model(const std::string& name) {
  const auto& entry = Registry<Classifier>::instance().get(name);
  YAML::Node cfg;
  for (auto& p : entry.schema.params())
    cfg[p.name] = p.name == "num_classes" ? YAML::Node(7) : YAML::Clone(p.default_value);
  torch::manual_seed(11);
  auto model = entry.make(Config(cfg, "model"));
  torch::NoGradGuard no_grad;
  for (auto& m : model->modules(false))
    if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      bn->running_mean.copy_(torch::randn_like(bn->running_mean) * 0.1);
      bn->running_var.copy_(torch::rand_like(bn->running_var) + 0.5);
    }
  return model;
}

// The model's own outputs are compared at 1 and at 2 intra-op threads, each with the reader run
// at the same count: PyTorch chooses a float convolution's kernel by the thread count
// (aten/src/ATen/native/Convolution.cpp, ConvParams::use_mkldnn, the same rule in 1.13 and 2.6:
// "For 1x1 filters, MKLDNN is faster than THNN when multi-threaded, but THNN is faster when
// single-threaded"): a 1x1, stride-1 convolution on a batch under 16 runs in oneDNN with 2
// threads and as im2col + BLAS with 1, which sums in another order. mobilenetv3_large_100 (1x1
// convolutions everywhere, logits up to ~300 with this test's BatchNorm statistics) gives logits
// 2.0e-3 apart between the two counts on LibTorch 2.6, 7.3e-4 on 1.13 (6.7e-6 of their size);
// with oneDNN off (torch.backends.mkldnn.flags(enabled=False)) 1 and 2 threads agree exactly. At
// the same count the reader and LibTorch run the same kernels, so the bound stays 1e-5.
TEST(TorchScriptExport, EveryRegisteredModelRunsInPythonAndLibTorchWithItsOwnOutputs) {
  test::TempDir dir;
  std::vector<std::string> names;
  std::map<std::string, std::map<int, at::Tensor>> expected;  // per model, per thread count
  std::map<std::string, std::vector<std::string>> state_keys;
  for (const std::string& name : test::every_model_pass(Registry<Classifier>::instance().names())) {
    auto model = export_test_model(name);
    const auto input_size = model->input_config().input_size;
    auto traced = trace_classifier(*model, input_size);
    EXPECT_TRUE(model->is_training()) << name << ": the model's mode is given back";
    save_torchscript(traced, dir / (name + ".pt"), {{"trainrun.json", "{\"model\": \"" + name + "\"}"}});
    std::vector<int64_t> shape{3};  // another batch size than the trace's 1
    shape.insert(shape.end(), input_size.begin(), input_size.end());
    at::Tensor x = torch::randn(shape);
    model->eval();
    torch::NoGradGuard no_grad;
    const int threads = at::get_num_threads();
    for (int t : {1, 2}) {
      at::set_num_threads(t);
      expected[name][t] = model->forward(x);
    }
    at::set_num_threads(threads);
    std::printf("[torchscript] %s: LibTorch eager, 1 thread vs 2: max|diff| %.3g (max|logit| %.3g)\n", name.c_str(),
                (expected[name][1] - expected[name][2]).abs().max().item<double>(),
                expected[name][2].abs().max().item<double>());
    save_safetensors(dir / (name + "_input.safetensors"), {{"input", x}});
    for (auto& p : model->named_parameters()) state_keys[name].push_back(p.key());
    for (auto& b : model->named_buffers()) state_keys[name].push_back(b.key());
    // LibTorch's reader.
    for (int t : {1, 2}) {
      at::set_num_threads(t);
      // Loaded afresh for each count: each run is the module's first call (the profiling
      // executor's second would compile TensorExpr fusion groups with LLVM first: minutes a
      // model on LibTorch 2.6); torchscript_check.py does the same.
      auto loaded = torch::jit::load(dir / (name + ".pt"));
      const double libtorch_diff = (loaded.forward({x}).toTensor() - expected[name][t]).abs().max().item<double>();
      std::printf("[torchscript] %s: LibTorch torch::jit::load, %d thread(s): max|diff| %.3g\n", name.c_str(), t,
                  libtorch_diff);
      EXPECT_LE(libtorch_diff, 1e-5) << name << ", " << t << " thread(s)";
    }
    at::set_num_threads(threads);
    names.push_back(name);
  }
  ASSERT_GE(names.size(), 3u);
  std::string args;
  for (auto& n : names) args += " " + n;
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/torchscript_check.py") + " models " +
                      dir.path().string() + args);
  ASSERT_EQ(py.code, 0) << py.err;
  const json got = json::parse(py.out);
  for (auto& name : names) {
    for (int t : {1, 2}) {
      at::Tensor out = load_safetensors(dir / (name + "_python_" + std::to_string(t) + ".safetensors")).at(0).second;
      ASSERT_EQ(out.sizes(), expected[name][t].sizes()) << name;
      const double diff = (out - expected[name][t]).abs().max().item<double>();
      std::printf("[torchscript] %s: Python torch.jit.load, %d thread(s): max|diff| %.3g\n", name.c_str(), t, diff);
      EXPECT_LE(diff, 1e-5) << name << ", " << t << " thread(s) in both";
    }
    EXPECT_FALSE(got[name]["training"].get<bool>()) << name;
    // The state_dict a Python user sees is the model's (same names: the same safetensors keys).
    std::set<std::string> want(state_keys[name].begin(), state_keys[name].end());
    std::set<std::string> have;
    for (auto& k : got[name]["keys"]) have.insert(k.get<std::string>());
    EXPECT_EQ(have, want) << name;
    EXPECT_EQ(got[name]["extra"]["trainrun.json"], "{\"model\": \"" + name + "\"}") << name;
  }
}

// Three classes of RGB images of several sizes, 4 training and 2 validation images each.
void write_export_images(const std::string& dir) {
  torch::manual_seed(5);
  int i = 0;
  for (const std::string cls : {"cat", "dog", "owl"}) {
    for (const std::string split : {"train", "val"}) {
      std::filesystem::create_directories(dir + "/" + split + "/" + cls);
      for (int k = 0; k < (split == "train" ? 4 : 2); ++k, ++i)
        write_image(dir + "/" + split + "/" + cls + "/" + std::to_string(k) + ".png",
                    torch::randint(0, 256, {40 + 7 * (i % 5), 50 + 3 * (i % 4), 3}, torch::kUInt8));
    }
  }
}

constexpr const char* kExportRecipe = R"(
name: export
seed: 1
model: {name: resnet18, num_classes: auto}
data:
  dataset: {name: image_folder, root: ROOT/train, val_root: ROOT/val}
  train_transforms: [{random_resized_crop: {size: 48}}, to_tensor, {normalize: {mean: model, std: model}}]
  eval_transforms: [{resize: {size: 56, interpolation: bicubic}}, {center_crop: {size: 48}}, to_tensor, {normalize: {mean: model, std: model}}]
  batch_size: 4
  workers: 1
optimizer: {name: sgd, lr: 0.01}
train: {epochs: 1, eval_every: never, log_every_steps: 1}
world: {nproc_per_node: 1}
)";

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
  return out;
}

void expect_same_logits(const std::vector<json>& got, const std::vector<json>& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]["file"], want[i]["file"]) << what;
    EXPECT_EQ(got[i]["label"], want[i]["label"]) << what;
    ASSERT_EQ(got[i]["logits"].size(), want[i]["logits"].size()) << what;
    for (std::size_t k = 0; k < got[i]["logits"].size(); ++k)
      worst = std::max(worst, std::abs(got[i]["logits"][k].get<double>() - want[i]["logits"][k].get<double>()));
  }
  std::printf("[torchscript] %s: max|logit diff| %.3g over %zu images\n", what.c_str(), worst, got.size());
  EXPECT_LE(worst, tolerance) << what;
}

TEST(TorchScriptExport, AnExportedRunClassifiesImagesAloneAsPredictDoes) {
  test::TempDir dir;
  write_export_images(dir / "data");
  std::string text = kExportRecipe;
  for (std::size_t at; (at = text.find("ROOT")) != std::string::npos;) text.replace(at, 4, dir / "data");
  test::write_file(dir / "export.yaml", text);
  auto r = test::run(test::trainrun((dir / "export.yaml") + " output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;

  r = test::run(test::trainrun("export " + (dir / "export.yaml") + " --checkpoint " + (dir / "run") + " --format torchscript"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_TRUE(std::filesystem::is_regular_file(dir / "run/model.pt")) << r.out;

  std::string images;
  for (const std::string cls : {"cat", "dog", "owl"})
    for (int k = 0; k < 2; ++k) images += " " + (dir / ("data/val/" + cls + "/" + std::to_string(k) + ".png"));
  auto with_recipe = test::run(test::trainrun("predict " + (dir / "export.yaml") + " --checkpoint " + (dir / "run") + images));
  ASSERT_EQ(with_recipe.code, 0) << with_recipe.err;
  auto alone = test::run(test::trainrun("predict --model " + (dir / "run/model.pt") + images));
  ASSERT_EQ(alone.code, 0) << alone.err;
  auto python = test::run(std::string(test::kPython) + " " + test::source("tests/py/torchscript_check.py") + " predict " +
                          (dir / "run/model.pt") + images);
  ASSERT_EQ(python.code, 0) << python.err;
  const auto want = json_lines(with_recipe.out);
  ASSERT_EQ(want.size(), 6u) << with_recipe.out;
  expect_same_logits(json_lines(alone.out), want, 1e-5, "predict --model vs predict --checkpoint");
  expect_same_logits(json_lines(python.out), want, 1e-5, "Python torch.jit.load + torchvision vs predict --checkpoint");
  // The same model as ONNX (runner/export/onnx.cpp; its numbers: tests/export/onnx_test.cpp): onnx's
  // checker accepts it, the input is what the eval pipeline makes, and metadata_props carry the
  // TorchScript file's extra files.
  r = test::run(test::trainrun("export " + (dir / "export.yaml") + " --checkpoint " + (dir / "run") + " --format onnx"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto onnx = test::run(std::string(test::kPython) + " " + test::source("tests/py/onnx_check.py") + " " + (dir / "run/model.onnx"));
  ASSERT_EQ(onnx.code, 0) << onnx.err;
  const json declared = json::parse(onnx.out);
  EXPECT_EQ(declared["checker"], "ok") << onnx.out;
  EXPECT_EQ(declared["inputs"], json::parse(R"([["input", ["batch", 3, 48, 48]]])")) << onnx.out;
  auto python_files = test::run(std::string(test::kPython) + " -c \"import json, torch; f = {'preprocess.json': '', 'labels.json': '', "
                                "'trainrun.json': ''}; torch.jit.load('" + (dir / "run/model.pt") + "', _extra_files=f); "
                                "print(json.dumps({k[:-5]: v.decode() for k, v in f.items()}))\"");
  ASSERT_EQ(python_files.code, 0) << python_files.err;
  EXPECT_EQ(declared["metadata"], json::parse(python_files.out));
  EXPECT_EQ(json::parse(declared["metadata"]["preprocess"].get<std::string>())["crop"], 48);
  EXPECT_EQ(json::parse(declared["metadata"]["labels"].get<std::string>())["2"], "owl");

  // Same JSON lines otherwise (the top-k, the scores).
  const auto alone_lines = json_lines(alone.out);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(alone_lines[i]["topk"].size(), want[i]["topk"].size());
    EXPECT_EQ(alone_lines[i]["index"], want[i]["index"]);
    EXPECT_NEAR(alone_lines[i]["score"].get<double>(), want[i]["score"].get<double>(), 1e-5);
  }
}

TEST(TorchScriptExport, BadCommandLinesAreExit2AndWriteNothing) {
  test::TempDir dir;
  test::write_file(dir / "run/model.safetensors", "");  // never read: each command stops before
  const std::string recipe = test::source("recipes/quickstart.yaml");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {"export " + recipe + " --checkpoint " + (dir / "run") + " --format tflite", "export: --format tflite: expected torchscript, onnx or hub"},
           {"export " + recipe + " --checkpoint " + (dir / "run") + " --format onnx --repo me/x",
            "export: --repo and --license are for --format hub (the model card's)"},
           {"export " + recipe + " --checkpoint " + (dir / "nothing") + " --format torchscript", "export: --checkpoint " + (dir / "nothing") + ": no such file or folder"},
           {"export " + recipe + " --checkpoint " + (dir / "run") + " --format torchscript --ema",
            "export: --ema: " + (dir / "run/model_ema.safetensors") + ": no such file (was train.ema on for this run?)"},
           {"predict --model " + (dir / "run/model.safetensors") + " " + recipe, "predict: --model " + (dir / "run/model.safetensors") + ": not a TorchScript file"},
           {"predict --model " + (dir / "run/missing.pt") + " " + recipe, "predict: --model " + (dir / "run/missing.pt") + ": no such file"},
           {"predict --model " + (dir / "run/model.safetensors"), "predict: no image files given"},
           {"predict " + recipe + " " + recipe, "predict: a recipe and --checkpoint, or --model, are needed"},
       }) {
    auto r = test::run(test::trainrun(c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "run"), std::filesystem::directory_iterator{}), 1);
}

}  // namespace
}  // namespace trainrun
