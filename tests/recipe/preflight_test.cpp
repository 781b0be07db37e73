// Exit 2 means nothing was started and nothing written (docs/reference/bad-inputs.md): the
// optimizer and scheduler are built, and one example goes through each transform pipeline and the
// model, before the run folder exists or a worker is launched. `trainrun check` finds the same
// mistakes.
#include "test_util.h"

namespace trainrun {
namespace {

struct BadRecipe {
  std::string override_, line;
};

TEST(Preflight, RecipeMistakesFoundOnlyByBuildingAreExit2WithNothingWritten) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::vector<BadRecipe> cases = {
      {"'scheduler={name: onecycle, max_lr: 0.1, total_steps: 3}'",
       "scheduler.total_steps: 3 is fewer than the run's 8 optimizer steps"},
      {"'scheduler={name: cosine, warmup_steps: 100}'", "scheduler.warmup_steps: 100 leaves no step for the cosine"},
      {"'optimizer={name: sgd, lr: 0.1, nesterov: true}'", "optimizer.nesterov: needs momentum > 0 and dampening 0"},
      {"'data.train_transforms=[to_tensor, {normalize: {mean: [0.5, 0.5, 0.5], std: [1, 1, 1]}}]'",
       "data.train_transforms: cannot transform an example: normalize: 3 means for an image with 1 channels"},
      {"'data.eval_transforms=[to_tensor, {center_crop: {size: 20}}]'",
       "data.eval_transforms: cannot transform an example: expected a uint8 H x W x C image (put image transforms "
       "before to_tensor)"},
      {"'data.train_transforms=[{resize: {size: 28}}]'",
       "data.train_transforms: the pipeline ends with a Byte tensor of shape [28, 28, 1], not a float C x H x W image"},
      {"'data.train_transforms=[{resize: {size: 32}}, to_tensor]'",
       "data.train_transforms: basicnet cannot take its output ([1, 32, 32]): mat1 and mat2 shapes cannot be multiplied"},
      {"data.max_train_samples=1",
       "world: 2 processes for 1 training examples; every process needs at least one"},
  };
  for (const auto& c : cases) {
    test::TempDir dir;
    std::string args = test::source("recipes/quickstart.yaml") +
                       " data.max_train_samples=1000 world.nproc_per_node=2 world.master_port=0 " + c.override_ +
                       " output.dir=" + (dir / "run");
    auto check = test::run(test::trainrun("check " + args));
    EXPECT_EQ(check.code, 2) << c.override_ << "\n" << check.err;
    EXPECT_NE(check.err.find(c.line), std::string::npos) << c.override_ << "\n" << check.err;

    auto run = test::run(test::trainrun(args));
    EXPECT_EQ(run.code, 2) << c.override_ << "\n" << run.err;
    EXPECT_NE(run.err.find(c.line), std::string::npos) << c.override_ << "\n" << run.err;
    EXPECT_EQ(test::count_lines(run.err), 1) << run.err;  // one line: no worker was launched to fail
    EXPECT_FALSE(std::filesystem::exists(dir / "run")) << c.override_;
  }
}

}  // namespace
}  // namespace trainrun
