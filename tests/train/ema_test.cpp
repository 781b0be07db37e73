// train.ema (timm's ModelEmaV3) and output.load_best_model_at_end, end to end with the trainrun
// binary on a Fashion-MNIST subset: a resnet18 (BatchNorm buffers to average and
// num_batches_tracked to copy) whose EMA after every step is checked, bit for bit, against
// tests/py/ema_ref.py fed the same steps' weights; eval_ema_* against `trainrun eval` of the EMA
// weights; a resumed run's EMA against an uninterrupted one's; the best checkpoint's weights
// as the final model, chosen by the EMA's accuracy beside early stopping on it.
#include "support/safetensors.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class Ema : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  // resnet18 on 3-channel 28x28 Fashion-MNIST: 96 examples, batch 16, 6 steps per epoch.
  std::string args(const std::string& run, const std::string& more, const std::string& command = "") const {
    const std::string pipeline = "[{grayscale: {num_output_channels: 3}}, to_tensor, {normalize: {mean: model, std: model}}]";
    return test::trainrun(command + test::source("recipes/quickstart.yaml") +
                          " 'model={name: resnet18, num_classes: 10, pretrained: null}'"
                          " 'data.train_transforms=" + pipeline + "' 'data.eval_transforms=" + pipeline + "'"
                          " data.max_train_samples=96 data.max_eval_samples=64 data.batch_size=16 data.workers=0"
                          " 'optimizer={name: sgd, lr: 0.05, momentum: 0.9}' world.nproc_per_node=1 world.master_port=0"
                          " output.dir=" + (dir / run) + " " + more);
  }
  std::string ckpt(const std::string& run, int step, const std::string& file) const {
    return dir / (run + "/checkpoint-" + std::to_string(step) + "/" + file);
  }
  test::TempDir dir;
};

// Same names, shapes and values; by name, since the real safetensors package (Debian 13's
// python3-safetensors, used by tests/py/st.py where installed) writes the tensors sorted.
bool same_tensors(const TensorList& a, const TensorList& b, double* worst = nullptr) {
  if (a.size() != b.size()) return false;
  std::map<std::string, at::Tensor> by_name(b.begin(), b.end());
  bool same = true;
  for (const auto& [name, t] : a) {
    auto it = by_name.find(name);
    if (it == by_name.end() || !t.sizes().equals(it->second.sizes())) return false;
    same &= torch::equal(t, it->second);
    if (worst && t.is_floating_point()) *worst = std::max(*worst, (t - it->second).abs().max().item<double>());
  }
  return same;
}

// With warm-up (min_decay and the decay cap both reached within the run) the EMA of every
// checkpoint is timm's, bit for bit; the EMA metrics are those of `trainrun eval` on the EMA
// weights; every_n_steps leaves the EMA alone between updates.
TEST_F(Ema, EveryStepIsTimmsModelEmaV3AndEvaluatedBeside) {
  const std::string ema = "'train.ema={decay: 0.6, min_decay: 0.5, warmup: true, warmup_gamma: 2.0, warmup_power: 0.75}'";
  auto run = test::run(args("run", ema + " train.epochs=1 output.save_every=1 output.keep_last=null train.eval_every=3"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir / "run/model_ema.safetensors"));
  std::string steps;
  for (int s = 1; s <= 6; ++s) steps += " " + ckpt("run", s, "model.safetensors");
  auto py = test::run(std::string(test::kPython) + " " + test::source("tests/py/ema_ref.py") + " " +
                      (dir / "ref-{k}.safetensors") + " 0.6 0.5 true 2.0 0.75" + steps);
  ASSERT_EQ(py.code, 0) << py.err;
  for (int s = 1; s <= 6; ++s) {
    double worst = 0;
    EXPECT_TRUE(same_tensors(load_safetensors(ckpt("run", s, "model_ema.safetensors")),
                             load_safetensors(dir / ("ref-" + std::to_string(s) + ".safetensors")), &worst))
        << "step " << s << ": max abs difference " << worst;
  }
  EXPECT_EQ(test::read_file(dir / "run/model_ema.safetensors"), test::read_file(ckpt("run", 6, "model_ema.safetensors")));
  EXPECT_FALSE(same_tensors(load_safetensors(ckpt("run", 6, "model_ema.safetensors")), load_safetensors(ckpt("run", 6, "model.safetensors"))));

  // Step 3's evaluation: eval_ema_* is what `trainrun eval` says of the EMA weights.
  nlohmann::json line;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (l.contains("eval_ema_loss") && l["step"] == 3) line = l;
  ASSERT_FALSE(line.is_null()) << "no eval_ema_loss at step 3 in metrics.jsonl";
  ASSERT_TRUE(line.contains("eval_ema_accuracy"));
  EXPECT_NE(line["eval_ema_loss"].get<double>(), line["eval_loss"].get<double>());
  fs::create_directories(dir / "ema-3");
  fs::copy_file(ckpt("run", 3, "model_ema.safetensors"), dir / "ema-3/model.safetensors");
  auto eval = test::run(args("eval", "", "eval --checkpoint " + (dir / "ema-3/model.safetensors") + " "));
  ASSERT_EQ(eval.code, 0) << eval.err;
  auto report = nlohmann::json::parse(test::read_file(dir / "ema-3/eval_report.json"));
  EXPECT_DOUBLE_EQ(report["eval_loss"].get<double>(), line["eval_ema_loss"].get<double>());
  EXPECT_DOUBLE_EQ(report["eval_accuracy"].get<double>(), line["eval_ema_accuracy"].get<double>());

  auto sparse = test::run(args("sparse", "'train.ema={decay: 0.5, every_n_steps: 3}' train.epochs=1 output.save_every=1 "
                                         "output.keep_last=null train.eval_every=never"));
  ASSERT_EQ(sparse.code, 0) << sparse.err;
  EXPECT_EQ(test::read_file(ckpt("sparse", 4, "model_ema.safetensors")), test::read_file(ckpt("sparse", 5, "model_ema.safetensors")));
  EXPECT_NE(test::read_file(ckpt("sparse", 5, "model_ema.safetensors")), test::read_file(ckpt("sparse", 6, "model_ema.safetensors")));
}

// Interrupted after step 4 and resumed: the EMA (and the weights) end as the uninterrupted run's.
TEST_F(Ema, ResumedRunHasTheUninterruptedEma) {
  const std::string more = "'train.ema={decay: 0.7}' train.epochs=2 output.save_every=2 train.eval_every=never";
  auto full = test::run(args("full", more));
  ASSERT_EQ(full.code, 0) << full.err;
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=4 " + args("split", more));
  ASSERT_EQ(first.code, 130) << first.err;
  EXPECT_FALSE(fs::exists(dir / "split/model_ema.safetensors"));
  auto second = test::run(args("split", more));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE((second.out + second.err).find("Continuing training"), std::string::npos) << second.out;
  EXPECT_EQ(test::read_file(dir / "full/model_ema.safetensors"), test::read_file(dir / "split/model_ema.safetensors"));
  EXPECT_EQ(test::read_file(dir / "full/model.safetensors"), test::read_file(dir / "split/model.safetensors"));
}

// load_best_model_at_end: the final model is checkpoint-best's, by the EMA's loss (its EMA file)
// or by the model's own accuracy (its model.safetensors), as transformers loads the best model.
TEST_F(Ema, LoadBestModelAtEndTakesTheBestCheckpointsWeights) {
  auto ema = test::run(args("ema", "'train.ema={decay: 0.5}' train.epochs=2 output.save_every=2 train.eval_every=2 "
                                   "output.metric_for_best_model=ema_loss output.load_best_model_at_end=true output.keep_last=null"));
  ASSERT_EQ(ema.code, 0) << ema.err;
  std::map<double, int64_t> by_loss;
  for (auto& l : test::read_jsonl(dir / "ema/metrics.jsonl"))
    if (l.contains("eval_ema_loss")) by_loss[l["eval_ema_loss"].get<double>()] = l["step"].get<int64_t>();
  ASSERT_GE(by_loss.size(), 3u);
  const int best = int(by_loss.begin()->second);
  EXPECT_EQ(fs::read_symlink(dir / "ema/checkpoint-best").filename().string(), "checkpoint-" + std::to_string(best));
  EXPECT_EQ(test::read_file(dir / "ema/model.safetensors"), test::read_file(ckpt("ema", best, "model_ema.safetensors")));
  EXPECT_NE((ema.out + ema.err).find("Loading best model from"), std::string::npos) << ema.out;

  auto plain = test::run(args("plain", "train.epochs=2 output.save_every=2 train.eval_every=2 output.keep_last=null "
                                       "output.metric_for_best_model=accuracy output.greater_is_better=true "
                                       "output.load_best_model_at_end=true"));
  ASSERT_EQ(plain.code, 0) << plain.err;
  std::string target = fs::read_symlink(dir / "plain/checkpoint-best").filename().string();
  EXPECT_EQ(test::read_file(dir / "plain/model.safetensors"), test::read_file(dir / ("plain/" + target + "/model.safetensors")));
  auto state = nlohmann::json::parse(test::read_file(dir / ("plain/" + target + "/trainer_state.json")));
  double top = 0;
  for (auto& l : test::read_jsonl(dir / "plain/metrics.jsonl"))
    if (l.contains("eval_accuracy")) top = std::max(top, l["eval_accuracy"].get<double>());
  EXPECT_EQ(state["best_metric"].get<double>(), top);
}

// Early stopping and checkpoint-best by the EMA weights' accuracy, as the Recipes page says both
// can judge by eval_ema_*: threshold 1.0 counts no change of an accuracy as a gain, so the second
// evaluation (step 4 of 18) stops the run; model.safetensors is then the best checkpoint's
// model_ema.safetensors, byte for byte.
TEST_F(Ema, EarlyStoppingAndBestModelByTheEmaAccuracy) {
  auto r = test::run(args("stop", "'train.ema={decay: 0.5}' train.epochs=3 output.save_every=2 train.eval_every=2 "
                                  "output.keep_last=null output.metric_for_best_model=eval_ema_accuracy "
                                  "output.load_best_model_at_end=true "
                                  "'callbacks=[{name: early_stopping, metric: eval_ema_accuracy, patience: 1, threshold: 1.0}]'"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("Early stopping at step 4: eval_ema_accuracy has not improved on "), std::string::npos)
      << r.out << r.err;
  int64_t best = 0, last = 0;
  double top = -1;
  for (auto& l : test::read_jsonl(dir / "stop/metrics.jsonl")) {
    last = std::max(last, l["step"].get<int64_t>());
    if (!l.contains("eval_ema_accuracy") || l["eval_ema_accuracy"].get<double>() <= top) continue;
    top = l["eval_ema_accuracy"].get<double>();  // the first of equals is the best, as checkpoint-best keeps it
    best = l["step"].get<int64_t>();
  }
  EXPECT_EQ(last, 4);
  ASSERT_GT(best, 0);
  EXPECT_EQ(fs::read_symlink(dir / "stop/checkpoint-best").filename().string(), "checkpoint-" + std::to_string(best));
  EXPECT_EQ(test::read_file(dir / "stop/model.safetensors"), test::read_file(ckpt("stop", int(best), "model_ema.safetensors")));
  EXPECT_NE((r.out + r.err).find("Loading best model from " + ckpt("stop", int(best), "model_ema.safetensors")), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trainrun
