// trainer_state.json as transformers reads it: every one a run writes goes through
// tests/py/hf_trainer_state.py, transformers' TrainerState dataclass (fields and defaults from its
// source at a cited commit) built the way TrainerState.load_from_json builds it, so a key that is
// not a field is a TypeError, as in transformers; a missing field is refused too.
#include "test_util.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

test::RunResult check(const std::string& path) {
  return test::run(std::string(test::kPython) + " " + test::source("tests/py/hf_trainer_state.py") + " " + path);
}

class TrainerState : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  test::TempDir dir;
};

// Two processes, evaluations, a best checkpoint, early_stopping (stateful_callbacks), an
// interrupted run resumed: every checkpoint's trainer_state.json, checkpoint-best's included.
TEST_F(TrainerState, EveryTrainerStateJsonARunWritesIsTransformersTrainerState) {
  const std::string args =
      test::source("recipes/quickstart.yaml") +
      " data.max_train_samples=640 data.max_eval_samples=100 train.epochs=2 train.eval_every=3"
      " output.save_every=3 output.keep_last=null world.nproc_per_node=2 output.dir=" + (dir / "run") +
      " 'callbacks=[{name: early_stopping, metric: accuracy, patience: 5}]'";
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=4 " + test::trainrun(args));
  ASSERT_EQ(first.code, 130) << first.err;
  auto second = test::run(test::trainrun(args));
  ASSERT_EQ(second.code, 0) << second.err;

  // 5 steps per epoch: checkpoint-3, -4 (the interrupt), -6, -9, -10 and checkpoint-best.
  std::vector<std::string> checkpoints;
  for (auto& e : fs::directory_iterator(dir / "run"))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0) checkpoints.push_back(e.path().string());
  ASSERT_TRUE(fs::exists(dir / "run/checkpoint-4") && fs::is_symlink(dir / "run/checkpoint-best"));
  auto r = check(dir / "run");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(test::count_lines(r.out), int(checkpoints.size())) << r.out;  // one "ok FILE" each
  for (auto& c : checkpoints) {
    json state = json::parse(test::read_file(c + "/trainer_state.json"));
    EXPECT_FALSE(state.contains("trainrun")) << c;
    EXPECT_TRUE(state["stateful_callbacks"].contains("EarlyStoppingCallback")) << c;
    EXPECT_TRUE(fs::exists(c + "/trainrun_state.json")) << c;
  }
}

// The reader refuses what transformers would: the key today's checkpoints used to carry, and a
// file without one of the fields save_to_json always writes.
TEST_F(TrainerState, ReaderRefusesUnknownAndMissingKeys) {
  auto run = test::run(test::trainrun(test::source("recipes/quickstart.yaml") +
                                      " data.max_train_samples=128 data.max_eval_samples=100 world.nproc_per_node=1"
                                      " output.dir=" + (dir / "run")));
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string good = dir / "run/checkpoint-2/trainer_state.json";
  ASSERT_EQ(check(good).code, 0) << check(good).out;
  json state = json::parse(test::read_file(good));

  json unknown = state;
  unknown["trainrun"] = {{"epoch_index", 1}};
  test::write_file(dir / "unknown/trainer_state.json", unknown.dump(2));
  auto r = check(dir / "unknown/trainer_state.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("TypeError: TrainerState.__init__() got an unexpected keyword argument 'trainrun'"),
            std::string::npos)
      << r.out;

  json missing = state;
  missing.erase("num_input_tokens_seen");
  test::write_file(dir / "missing/trainer_state.json", missing.dump(2));
  r = check(dir / "missing/trainer_state.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("missing key(s) num_input_tokens_seen"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainrun
