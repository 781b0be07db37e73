// data.synthetic (the step without its data path, what bench/compare's input ratio divides by):
// the run loads one batch, the one a run of the data path starts with (the examples recorded with
// TRAINRUN_RECORD_SAMPLE_IDS), and every step of every epoch trains on it; the banner says so; a
// synthetic run is another job than the same recipe with its data path, and a run of the data
// path keeps the fingerprint it had before the key existed (its older checkpoints still resume).
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

TEST(SyntheticInput, EveryStepTrainsOnTheFirstBatchAndNoOtherIsLoaded) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  // 640 examples in batches of 64 on one process: 10 steps an epoch; two decode threads, which
  // would read ahead if anything started them.
  const std::string recipe = test::source("recipes/quickstart.yaml") + " data.dataset.root=" + test::kFashionMnist +
                             " data.max_train_samples=640 data.max_eval_samples=100 data.batch_size=64 data.workers=2"
                             " world.nproc_per_node=1 train.log_every_steps=1 output.save_every=epoch";
  auto run = [&](const std::string& name, const std::string& args) {
    fs::create_directories(dir / (name + "-ids"));
    return test::run("TRAINRUN_RECORD_SAMPLE_IDS='" + (dir / (name + "-ids")) + "' " +
                     test::trainrun(recipe + " " + args + " output.dir='" + (dir / name) + "'"));
  };
  const auto real = run("real", "train.epochs=1");
  ASSERT_EQ(real.code, 0) << real.out << real.err;
  const auto synthetic = run("synthetic", "train.epochs=2 data.synthetic=true");
  ASSERT_EQ(synthetic.code, 0) << synthetic.out << synthetic.err;
  EXPECT_NE(synthetic.out.find("  Synthetic input = every step trains on the first batch, held on cpu (data.synthetic: "
                               "the data path left out)\n"),
            std::string::npos) << synthetic.out;
  EXPECT_EQ(real.out.find("Synthetic input"), std::string::npos) << real.out;

  // One batch loaded in two epochs, and it is the first one the data path's run trained on.
  const auto loaded = test::read_jsonl(dir / "synthetic-ids/rank-0.jsonl");
  const auto real_loaded = test::read_jsonl(dir / "real-ids/rank-0.jsonl");
  ASSERT_EQ(real_loaded.size(), 10u);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0]["epoch"], 0);
  EXPECT_EQ(loaded[0]["batch"], 0);
  EXPECT_EQ(loaded[0]["ids"], real_loaded[0]["ids"]);
  EXPECT_EQ(loaded[0]["ids"].size(), 64u);

  // Every step of both epochs ran, on the same 64 examples: AdamW at 1e-3 learns them (the loss
  // of 20 steps on the data path's 640 examples stays near its start).
  const auto loss = test::by_step(dir / "synthetic/metrics.jsonl", "loss");
  ASSERT_EQ(loss.size(), 20u);
  EXPECT_EQ(loss.rbegin()->first, 20);
  EXPECT_LT(loss.at(20), 0.25 * loss.at(1)) << loss.at(1) << " -> " << loss.at(20);
  const auto real_loss = test::by_step(dir / "real/metrics.jsonl", "loss");
  ASSERT_EQ(real_loss.size(), 10u);
  EXPECT_GT(real_loss.at(10), 0.25 * real_loss.at(1)) << real_loss.at(1) << " -> " << real_loss.at(10);
  EXPECT_EQ(loss.at(1), real_loss.at(1));  // step 1 is the same step on the same batch

  // Another job: the data path's run refuses the synthetic run's folder, naming the key; its own
  // fingerprint has no such key.
  const auto check = test::run(test::trainrun("check " + recipe + " train.epochs=2 output.dir='" + (dir / "synthetic") + "'"));
  EXPECT_NE(check.out.find("run folder: refuse (exit 2): " + (dir / "synthetic") +
                           " holds another run: data.synthetic true -> (none);"),
            std::string::npos) << check.out << check.err;
  const auto state = nlohmann::json::parse(test::read_file(dir / "real/checkpoint-10/trainrun_state.json"));
  ASSERT_TRUE(state.contains("job")) << state.dump();
  EXPECT_FALSE(state["job"]["data"].contains("synthetic")) << state["job"].dump();
}

}  // namespace
}  // namespace trainrun
