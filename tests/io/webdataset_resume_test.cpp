// Training from WebDataset shards, end to end with the trainrun binary: runs stopped mid-epoch
// (SIGKILL after a step checkpoint, or the interrupt) and resumed reach the uninterrupted run's
// weights bit for bit, with 1 and 2 processes and 2 streams each (data.workers: 2), a shuffle
// buffer and random transforms; the loader's state is in the checkpoint and the resumed run
// reopens the shards there.
#include "support/same_run.h"
#include "support/wds_recipe.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace wds_resume_test {

using nlohmann::json;
namespace fs = std::filesystem;

class WebDatasetResume : public ::testing::Test {
 protected:
  void SetUp() override {
    // 11 shards of 40: 440 samples; batch 16 -> 28 batches an epoch in one process (the last
    // of 8), 14 in two (220 samples each, the last batch of 12).
    ASSERT_EQ(test::write_wds_shards(dir, 440, 40, 80), "");
    test::write_file(dir / "recipe.yaml", test::wds_recipe_head(dir, "000010", 50) +
                                            R"(  train_transforms: [{random_resized_crop: {size: [28, 28], scale: [0.6, 1.0]}}, random_horizontal_flip, {grayscale: {}}, to_tensor]
  eval_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  batch_size: 16
  workers: 2
optimizer: {name: adamw, lr: 0.003}
scheduler: {name: onecycle, max_lr: 0.003}
train: {epochs: 2, loss: cross_entropy, metrics: [accuracy], log_every_steps: 2}
world: {nproc_per_node: 1, master_port: 0}
)");
  }
  std::string args(const std::string& run, const std::string& more = "") const {
    return test::trainrun((dir / "recipe.yaml") + " output.dir=" + (dir / run) + " " + more);
  }
  void expect_same_run(const std::string& a, const std::string& b) const { test::expect_same_run(dir, a, b); }
  test::RunResult script(const std::string& text) const { return test::run_script(dir, text); }
  std::string wait_for(const std::string& folder) const { return test::wait_for_checkpoint(dir, folder); }
  test::TempDir dir;
};

TEST_F(WebDatasetResume, KilledMidEpochResumesBitIdenticalFromTheSavedStreams) {
  const std::string more = "output.save_every=5";
  auto full = test::run(args("full", more));
  ASSERT_EQ(full.code, 0) << full.err;
  json state = json::parse(test::read_file(dir / "full/checkpoint-56/trainer_state.json"));
  EXPECT_EQ(state["max_steps"], 56);

  auto killed = script(args("killed", more) + " >/dev/null 2>&1 & P=$!\n" + wait_for("killed/checkpoint-10") +
                       "kill -9 $P; wait $P; echo rc=$?\n");
  EXPECT_NE(killed.out.find("rc=137"), std::string::npos) << killed.out;
  ASSERT_FALSE(fs::exists(dir / "killed/model.safetensors"));
  // Step 10 of 28 in epoch 0: each of the two streams' shard, byte offset and shuffle buffer.
  json loader = json::parse(test::read_file(dir / "killed/checkpoint-10/loader_state.json"));
  ASSERT_EQ(loader["ranks"].size(), 1u);
  EXPECT_EQ(loader["ranks"][0]["batches"], 10);
  EXPECT_EQ(loader["ranks"][0]["streams"], 2);
  ASSERT_EQ(loader["ranks"][0]["state"].size(), 2u);
  for (const auto& s : loader["ranks"][0]["state"]) {
    EXPECT_EQ(s["delivered"], 5 * 16);  // batches 0, 2, ... from stream 0; 1, 3, ... from stream 1
    EXPECT_EQ(s["buffer"].size(), 50u);
  }
  auto resumed = test::run(args("killed", more));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Will skip the first 10 batches in the first epoch"), std::string::npos) << resumed.out;
  EXPECT_EQ((resumed.out + resumed.err).find("replayed"), std::string::npos) << resumed.out << resumed.err;
  expect_same_run("full", "killed");

  // Without the loader's state (a checkpoint another tool copied, say) the epoch's first batches
  // are read again and dropped: the same samples, so the same run, with a warning.
  fs::remove_all(dir / "killed");
  auto again = script(args("killed", more) + " >/dev/null 2>&1 & P=$!\n" + wait_for("killed/checkpoint-35") +
                      "kill -9 $P; wait $P; echo rc=$?\n");
  EXPECT_NE(again.out.find("rc=137"), std::string::npos) << again.out;
  fs::remove(dir / "killed/checkpoint-35/loader_state.json");
  resumed = test::run(args("killed", more + " output.resume=" + (dir / "killed/checkpoint-35")));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE((resumed.out + resumed.err).find("loader_state.json: not in the checkpoint; the epoch's batches are replayed"),
            std::string::npos) << resumed.out << resumed.err;
  expect_same_run("full", "killed");
}

TEST_F(WebDatasetResume, TwoProcessesKilledMidEpochResumeBitIdentical) {
  const std::string more = "world.nproc_per_node=2 output.save_every=3";
  auto full = test::run(args("full", more));
  ASSERT_EQ(full.code, 0) << full.err;
  // 220 samples a rank an epoch: 14 batches (13 of 16, one of 12).
  json state = json::parse(test::read_file(dir / "full/checkpoint-28/trainer_state.json"));
  EXPECT_EQ(state["max_steps"], 28);
  // The launcher and both workers killed at once, mid-epoch 0.
  auto killed = script(args("killed", more) + " >/dev/null 2>&1 & L=$!\n" + wait_for("killed/checkpoint-6") +
                       "W=$(pgrep -P $L); kill -9 $L $W; wait $L; echo rc=$?\n");
  EXPECT_NE(killed.out.find("rc=137"), std::string::npos) << killed.out;
  json loader = json::parse(test::read_file(dir / "killed/checkpoint-6/loader_state.json"));
  ASSERT_EQ(loader["ranks"].size(), 2u);
  EXPECT_EQ(loader["ranks"][1]["rank"], 1);
  EXPECT_NE(loader["ranks"][0]["state"], loader["ranks"][1]["state"]);
  auto resumed = test::run(args("killed", more));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Will skip the first 6 batches in the first epoch"), std::string::npos) << resumed.out;
  expect_same_run("full", "killed");

  // Interrupted (as by Ctrl-C) in the second epoch, then resumed.
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=19 " + args("split", more));
  ASSERT_EQ(first.code, 130) << first.err;
  auto second = test::run(args("split", more));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find("Will skip the first 5 batches in the first epoch"), std::string::npos) << second.out;
  expect_same_run("full", "split");
}

}  // namespace wds_resume_test
}  // namespace trainrun
