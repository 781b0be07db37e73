// Freeze rules over time: freeze[].from_epoch and train.unfreeze_at_epoch (gradual unfreezing).
#include "runner/job.h"
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

}  // namespace
}  // namespace trainrun
