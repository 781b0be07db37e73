// End to end: the trainrun binary on a Fashion-MNIST subset, its run folder, and the weights it
// writes read back by PyTorch itself.
#include "runner/recipe/job.h"
#include "support/safetensors.h"
#include "test_util.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

using nlohmann::json;

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
  std::string common = test::source("recipes/quickstart.yaml") + " data.max_train_samples=2000 data.max_eval_samples=1000 "
                       "train.log_every_steps=4 data.workers=2 world.nproc_per_node=1 ";
};

TEST_F(EndToEnd, LossFallsAndAccuracyBeatsChance) {
  auto r = test::run(test::trainrun(
      common + "train.epochs=2 train.metrics=[accuracy,f1_macro,balanced_accuracy,per_class] output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("***** Running training *****"), std::string::npos);
  EXPECT_NE(r.out.find("Total optimization steps = 64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{'loss': "), std::string::npos);
  EXPECT_NE(r.out.find("{'eval_loss': "), std::string::npos);
  // per_class: each evaluation's table, as `trainrun eval` lays it out (and nothing in the line).
  EXPECT_NE(r.out.find("  Ankle boot "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weighted avg"), std::string::npos) << r.out;

  auto lines = test::read_jsonl(dir / "run/metrics.jsonl");
  std::vector<double> losses;
  std::vector<json> evals;
  for (auto& l : lines) {
    ASSERT_TRUE(l.contains("step") && l.contains("epoch")) << l.dump();
    EXPECT_FALSE(l.contains("eval_per_class")) << l.dump();
    if (l.contains("loss")) losses.push_back(l["loss"]);
    if (l.contains("eval_loss")) evals.push_back(l);
  }
  ASSERT_EQ(losses.size(), 16u);  // 64 steps, logged every 4
  EXPECT_LT(losses.back(), 0.75 * losses.front());
  ASSERT_EQ(evals.size(), 2u);  // once per epoch
  EXPECT_EQ(evals[0]["step"], 32);
  EXPECT_EQ(evals[1]["eval_examples"], 1000);
  EXPECT_GT(evals[1]["eval_accuracy"].get<double>(), 0.5);  // chance is 0.1
  EXPECT_LT(evals[1]["eval_loss"].get<double>(), evals[0]["eval_loss"].get<double>());

  for (const char* f : {"recipe.resolved.yaml", "labels.json", "train.log", "metrics.jsonl", "model.safetensors"})
    EXPECT_TRUE(std::filesystem::exists(dir / ("run/" + std::string(f)))) << f;
  auto labels = json::parse(test::read_file(dir / "run/labels.json"));
  EXPECT_EQ(labels["9"], "Ankle boot");
  EXPECT_NE(test::read_file(dir / "run/train.log").find("Running training"), std::string::npos);

  // The resolved recipe runs again as is, and `check` accepts it.
  auto again = test::run(test::trainrun("check " + (dir / "run/recipe.resolved.yaml")));
  EXPECT_EQ(again.code, 0) << again.err;

  // PyTorch's own Net loads the weights with strict=True and gets the same evaluation.
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/basicnet_eval.py") + " " +
                      (dir / "run/model.safetensors") + " " + test::kFashionMnist + " 1000");
  ASSERT_EQ(py.code, 0) << py.err;
  auto ref = json::parse(py.out);
  EXPECT_DOUBLE_EQ(ref["eval_accuracy"].get<double>(), evals[1]["eval_accuracy"].get<double>());
  // train.metrics' f1_macro and balanced_accuracy are scikit-learn's on PyTorch's predictions.
  for (const char* m : {"eval_f1_macro", "eval_balanced_accuracy"})
    EXPECT_NEAR(ref[m].get<double>(), evals[1][m].get<double>(), 1e-12) << m;
  EXPECT_NEAR(ref["eval_loss"].get<double>(), evals[1]["eval_loss"].get<double>(), 1e-5);
}

TEST_F(EndToEnd, SameSeedSameLosses) {
  std::string args = common + "data.max_train_samples=640 train.eval_every=never ";
  ASSERT_EQ(test::run(test::trainrun(args + "output.dir=" + (dir / "a"))).code, 0);
  ASSERT_EQ(test::run(test::trainrun(args + "data.workers=0 output.dir=" + (dir / "b"))).code, 0);
  auto a = test::read_jsonl(dir / "a/metrics.jsonl"), b = test::read_jsonl(dir / "b/metrics.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i + 1 < a.size(); ++i) EXPECT_EQ(a[i]["loss"], b[i]["loss"]) << i;
  EXPECT_EQ(test::read_file(dir / "a/model.safetensors"), test::read_file(dir / "b/model.safetensors"));
}

TEST_F(EndToEnd, EvalCommandReadsTheSavedWeights) {
  ASSERT_EQ(test::run(test::trainrun(common + "data.max_train_samples=640 output.dir=" + (dir / "run"))).code, 0);
  auto evals = test::read_jsonl(dir / "run/metrics.jsonl");
  double acc = -1;
  for (auto& l : evals)
    if (l.contains("eval_accuracy")) acc = l["eval_accuracy"];
  auto r = test::eval_printing_accuracy(
      test::source("recipes/quickstart.yaml") + " data.max_eval_samples=1000 --checkpoint " + (dir / "run"), acc);
  EXPECT_NE(r.out.find("'eval_examples': 1000.0"), std::string::npos) << r.out;

  // The classification report: printed in sklearn's layout and written next to the weights.
  EXPECT_NE(r.out.find("weighted avg"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Ankle boot  "), std::string::npos) << r.out;
  auto report = json::parse(test::read_file(dir / "run/eval_report.json"));
  EXPECT_EQ(report["examples"], 1000);
  EXPECT_DOUBLE_EQ(report["accuracy"].get<double>(), acc);
  EXPECT_DOUBLE_EQ(report["eval_accuracy"].get<double>(), acc);
  EXPECT_GE(report["top5_accuracy"].get<double>(), acc);
  int64_t total = 0, diagonal = 0, support = 0;
  for (std::size_t t = 0; t < 10; ++t)
    for (std::size_t p = 0; p < 10; ++p) {
      int64_t v = report["confusion_matrix"][t][p];
      total += v;
      diagonal += t == p ? v : 0;
    }
  for (auto& [name, row] : report["classes"].items()) support += row["support"].get<int64_t>();
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(support, 1000);
  EXPECT_EQ(report["classes"].size(), 10u);
  EXPECT_DOUBLE_EQ(double(diagonal) / 1000.0, acc);
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

// precision: auto on a CPU: bf16 autocast where /proc/cpuinfo lists bf16 units, else fp32; the
// banner says which and why.
TEST_F(EndToEnd, PrecisionAutoPicksBf16WhereTheCpuHasBf16Units) {
  std::string flags = test::read_file("/proc/cpuinfo"), feature;
  for (const char* f : {" amx_bf16", " avx512_bf16", " bf16"})
    if (feature.empty() && (flags.find(std::string(f) + " ") != std::string::npos ||
                            flags.find(std::string(f) + "\n") != std::string::npos))
      feature = std::string(f).substr(1);
  auto r = test::run(test::trainrun(common + "precision=auto data.max_train_samples=128 train.eval_every=never "
                                    "output.dir=" + (dir / "auto")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string want = feature.empty() ? "precision = fp32 (auto: this CPU has no bf16 units)"
                                     : "precision = bf16 (auto: this CPU has " + feature + ")";
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
}

TEST_F(EndToEnd, FrozenParametersStayBitIdenticalAndBf16Trains) {
  auto r = test::run(test::trainrun(common + "precision=bf16 data.max_train_samples=640 'freeze=[{params: \"conv*\", trainable: false}]' "
                                    "output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Number of trainable parameters = 1,181,066 (of 1,199,882)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("precision = bf16"), std::string::npos);
  // The same recipe builds the same initial weights (seeded); frozen ones must not have moved.
  Job initial = build_job(load_recipe(test::source("recipes/quickstart.yaml")));
  TensorList trained = load_safetensors(dir / "run/model.safetensors");
  auto init = initial.model->named_parameters();
  for (auto& [name, value] : trained) {
    bool frozen = name.rfind("conv", 0) == 0;
    EXPECT_EQ(torch::equal(value, init[name]), frozen) << name;
  }
}

}  // namespace
}  // namespace trainrun

namespace trainrun {
namespace {

// `trainrun predict` on PNG files against PyTorch's Net on the same files (PIL + torchvision).
TEST_F(EndToEnd, PredictMatchesPyTorchOnImageFiles) {
  ASSERT_EQ(test::run(test::trainrun(common + "data.max_train_samples=640 train.eval_every=never output.dir=" + (dir / "run"))).code, 0);
  std::filesystem::create_directories(dir / "images");
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/basicnet_predict.py") + " " +
                      (dir / "run/model.safetensors") + " " + test::kFashionMnist + " 6 " + (dir / "images"));
  ASSERT_EQ(py.code, 0) << py.err;
  auto ref = json::parse(py.out);
  std::string files;
  for (auto& r : ref) files += " " + r["file"].get<std::string>();

  // A checkpoint folder (labels.json beside the weights), with overrides before the images.
  auto r = test::run(test::trainrun("predict " + test::source("recipes/quickstart.yaml") + " world.nproc_per_node=1 --top-k 3 --checkpoint " +
                                    (dir / "run") + files));
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    ASSERT_LT(i, ref.size()) << r.out;
    auto got = json::parse(line);
    EXPECT_EQ(got["file"], ref[i]["file"]);
    EXPECT_EQ(got["label"], ref[i]["label"]);
    EXPECT_EQ(got["index"], ref[i]["index"]);
    EXPECT_NEAR(got["score"].get<double>(), ref[i]["score"].get<double>(), 1e-5);
    ASSERT_EQ(got["topk"].size(), 3u);
    EXPECT_EQ(got["topk"][0]["label"], got["label"]);
    EXPECT_GE(got["topk"][0]["score"].get<double>(), got["topk"][1]["score"].get<double>());
    ASSERT_EQ(got["logits"].size(), 10u);
    for (std::size_t k = 0; k < 10; ++k) EXPECT_NEAR(got["logits"][k].get<double>(), ref[i]["logits"][k].get<double>(), 1e-4);
  }
  EXPECT_EQ(i, ref.size());
  // A checkpoint folder inside the run (labels.json one level up) predicts the same.
  auto from_checkpoint = test::run(test::trainrun("predict " + test::source("recipes/quickstart.yaml") +
                                                  " world.nproc_per_node=1 --top-k 3 --checkpoint " + (dir / "run/checkpoint-10") + files));
  ASSERT_EQ(from_checkpoint.code, 0) << from_checkpoint.err;
  EXPECT_EQ(from_checkpoint.out, r.out);

  // A file that is not an image is skipped with its name on stderr (exit 1); a missing one is a
  // bad command line (exit 2).
  test::write_file(dir / "images/broken.png", "not a png");
  auto bad = test::run(test::trainrun("predict " + test::source("recipes/quickstart.yaml") + " --checkpoint " +
                                      (dir / "run/model.safetensors") + " " + (dir / "images/broken.png") + " " + ref[0]["file"].get<std::string>()));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("broken.png"), std::string::npos) << bad.err;
  EXPECT_EQ(test::count_lines(bad.out), 1) << bad.out;
  auto missing = test::run(test::trainrun("predict " + test::source("recipes/quickstart.yaml") + " --checkpoint " +
                                          (dir / "run") + " " + (dir / "images/nope.png")));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("nope.png: no such file"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace trainrun

