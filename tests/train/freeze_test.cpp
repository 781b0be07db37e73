// Freeze rules over time: freeze[].from_epoch and train.unfreeze_at_epoch (gradual unfreezing).
#include "runner/recipe/freeze.h"
#include "runner/recipe/job.h"
#include "support/safetensors.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

std::vector<std::string> names(const NamedParameters& params) {
  std::vector<std::string> out;
  for (auto& [n, _] : params) out.push_back(n);
  return out;
}

TEST(FreezeSchedule, RulesTakeEffectAtTheirEpoch) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  Job job = build_job(load_recipe(test::source("recipes/quickstart.yaml"),
                                  {"freeze=[{params: 'conv*', trainable: false}, "
                                   "{params: 'conv2.*', trainable: true, from_epoch: 1}]",
                                   "train.unfreeze_at_epoch=3"}));
  // Epoch 0: only the fc layers train; a later rule is no "matches nothing" note.
  EXPECT_EQ(names(job.trainable()), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_TRUE(job.notes.empty()) << job.notes.front();
  EXPECT_FALSE(freeze_changes_at(job, 0));
  EXPECT_TRUE(freeze_changes_at(job, 1));
  EXPECT_FALSE(freeze_changes_at(job, 2));
  EXPECT_TRUE(freeze_changes_at(job, 3));

  EXPECT_EQ(names(apply_freeze_schedule(job, 1)), (std::vector<std::string>{"conv2.weight", "conv2.bias"}));
  EXPECT_TRUE(apply_freeze_schedule(job, 2).empty());
  EXPECT_EQ(names(apply_freeze_schedule(job, 3)), (std::vector<std::string>{"conv1.weight", "conv1.bias"}));
  EXPECT_EQ(job.trainable_parameters(), job.total_parameters());
}

TEST(FreezeSchedule, BadKeysAreRecipeErrors) {
  auto r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") + " train.unfreeze_at_epoch=0"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("train.unfreeze_at_epoch"), std::string::npos) << r.err;
  r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") +
                               " 'freeze=[{params: fc1.*, trainable: false, from_epoc: 1}]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("from_epoch"), std::string::npos) << r.err;  // did you mean
}


// Gradual unfreezing in a real run: the conv layers stay exactly as initialised through epoch 0,
// train from epoch 1, and a run interrupted after the unfreeze resumes bit-identically (the
// optimizer regains its added parameter groups before its state loads).
class Unfreeze : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  std::string args(const std::string& run, const std::string& more = "") const {
    return test::trainrun(test::source("recipes/quickstart.yaml") +
                          " data.max_train_samples=640 data.max_eval_samples=200 data.workers=1 train.epochs=2"
                          " train.log_every_steps=2 'scheduler={name: onecycle, max_lr: 0.003}' world.nproc_per_node=1"
                          " 'freeze=[{params: \"conv*\", trainable: false}]' train.unfreeze_at_epoch=1"
                          " 'optimizer={name: adamw, lr: 0.001, no_decay: [bias]}'"
                          " world.master_port=0 output.dir=" + (dir / run) + " " + more);
  }
  test::TempDir dir;
};

TEST_F(Unfreeze, FrozenUntilTheirEpochThenTrainAndResumeExactly) {
  auto full = test::run(args("full"));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_NE(full.out.find("Epoch 1: unfreezing 4 parameter tensors (1,199,882 of 1,199,882 parameters now train)"),
            std::string::npos) << full.out;
  Job initial = build_job(load_recipe(test::source("recipes/quickstart.yaml")));
  auto init = initial.model->named_parameters();
  TensorList after_epoch0 = load_safetensors(dir / "full/checkpoint-10/model.safetensors");
  TensorList final_weights = load_safetensors(dir / "full/model.safetensors");
  for (std::size_t i = 0; i < after_epoch0.size(); ++i) {
    const auto& [name, value] = after_epoch0[i];
    if (!init.contains(name)) continue;  // buffers
    bool conv = name.rfind("conv", 0) == 0;
    EXPECT_EQ(torch::equal(value, init[name]), conv) << name << " after epoch 0";
    EXPECT_FALSE(torch::equal(final_weights[i].second, init[name])) << name << " after epoch 1";
  }

  // Interrupted mid-way through epoch 1 (after the unfreeze), then resumed.
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=15 " + args("split"));
  ASSERT_EQ(first.code, 130) << first.err;
  auto second = test::run(args("split"));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(test::read_file(dir / "full/model.safetensors"), test::read_file(dir / "split/model.safetensors"));
  auto losses = [&](const std::string& run) {
    std::vector<double> out;
    for (auto& l : test::read_jsonl(dir / (run + "/metrics.jsonl")))
      if (l.contains("loss")) out.push_back(l["loss"]);
    return out;
  };
  EXPECT_EQ(losses("full"), losses("split"));
}

}  // namespace
}  // namespace trainrun
