// Checkpoints and resume, end to end with the trainrun binary: BasicNet (with its dropout, so
// the RNG restore matters) on a Fashion-MNIST subset, a onecycle schedule (scheduler and
// AdamW's cycled beta1 restored), interrupted and resumed runs compared bit for bit with
// uninterrupted ones.
#include "support/same_run.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <array>
#include <map>

namespace trainrun {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<std::string> folders(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  // 640 examples, batch 64: 10 optimizer steps per epoch in one process, 5 in two.
  std::string args(const std::string& run, const std::string& more = "") const {
    return test::trainrun(test::source("recipes/quickstart.yaml") +
                          " data.max_train_samples=640 data.max_eval_samples=500 data.workers=1 train.epochs=2"
                          " train.log_every_steps=2 'scheduler={name: onecycle, max_lr: 0.003}' world.nproc_per_node=1"
                          " world.master_port=0 output.dir=" + (dir / run) + " " + more);
  }
  void expect_same_run(const std::string& a, const std::string& b) const { test::expect_same_run(dir, a, b); }
  test::RunResult script(const std::string& text) const { return test::run_script(dir, text); }
  std::string wait_for(const std::string& folder) const { return test::wait_for_checkpoint(dir, folder); }
  test::TempDir dir;
};

TEST_F(Checkpoint, StoppedAfterOneEpochThenResumedIsBitIdentical) {
  auto full = test::run(args("full"));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_EQ(folders(dir / "full"), (std::vector<std::string>{"checkpoint-10", "checkpoint-20", "checkpoint-best"}));
  // Interrupted at the end of the first epoch, as SIGINT would: checkpoint, exit 130.
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=10 " + args("split"));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  EXPECT_NE(first.err.find("interrupted"), std::string::npos) << first.err;
  EXPECT_FALSE(fs::exists(dir / "split/model.safetensors"));
  auto second = test::run(args("split"));
  ASSERT_EQ(second.code, 0) << second.err;
  for (const char* line : {"Continuing training from checkpoint, will skip to saved global_step",
                           "Continuing training from epoch 1", "Continuing training from global step 10",
                           "Will skip the first 0 batches in the first epoch"})
    EXPECT_NE(second.out.find(line), std::string::npos) << line << "\n" << second.out;
  expect_same_run("full", "split");

  // trainer_state.json: the Trainer's fields, and the log history of the whole run.
  json state = json::parse(test::read_file(dir / "split/checkpoint-20/trainer_state.json"));
  EXPECT_EQ(state["global_step"], 20);
  EXPECT_EQ(state["max_steps"], 20);
  EXPECT_EQ(state["num_train_epochs"], 2);
  EXPECT_EQ(state["logging_steps"], 2);
  EXPECT_EQ(state["train_batch_size"], 64);
  EXPECT_DOUBLE_EQ(state["epoch"].get<double>(), 2.0);
  json full_state = json::parse(test::read_file(dir / "full/checkpoint-20/trainer_state.json"));
  ASSERT_EQ(state["log_history"].size(), full_state["log_history"].size());
  for (std::size_t i = 0; i < state["log_history"].size(); ++i)
    EXPECT_EQ(state["log_history"][i].value("loss", -1.0), full_state["log_history"][i].value("loss", -1.0)) << i;
  EXPECT_EQ(state["best_metric"], full_state["best_metric"]);
  for (const char* f : {"model.safetensors", "optimizer.pt", "scheduler.json", "scaler.json", "rng.pt", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(dir / ("split/checkpoint-20/" + std::string(f)))) << f;
  EXPECT_EQ(json::parse(test::read_file(dir / "split/checkpoint-20/scheduler.json"))["step"], 20);
}

// A checkpoint written before trainrun_state.json existed (trainrun's own state under
// trainer_state.json's "trainrun" key, no num_input_tokens_seen) still resumes, mid-epoch, to the
// uninterrupted run's result; the checkpoints it goes on to write have the new layout. The old
// folder is this run's checkpoint-7 rewritten into the layout main wrote before 47c5783.
TEST_F(Checkpoint, CheckpointInTheOldLayoutResumesBitIdentical) {
  ASSERT_EQ(test::run(args("full")).code, 0);
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args("old"));
  ASSERT_EQ(first.code, 130) << first.err;
  const fs::path folder = dir / "old/checkpoint-7";
  // Neither the file nor the key (a folder transformers wrote, say): one line, exit 1.
  fs::copy(folder, dir / "neither", fs::copy_options::recursive);
  fs::remove(dir / "neither/trainrun_state.json");
  auto neither = test::run(args("other", "output.resume=" + (dir / "neither")));
  EXPECT_EQ(neither.code, 1);
  EXPECT_NE(neither.err.find(dir / "neither/trainrun_state.json: missing, and trainer_state.json has no \"trainrun\""),
            std::string::npos)
      << neither.err;

  json state = json::parse(test::read_file(folder / "trainer_state.json"));
  state["trainrun"] = json::parse(test::read_file(folder / "trainrun_state.json"));
  state.erase("num_input_tokens_seen");
  test::write_file(folder / "trainer_state.json", state.dump(2) + "\n");
  fs::remove(folder / "trainrun_state.json");

  auto second = test::run(args("old"));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find("Will skip the first 7 batches in the first epoch"), std::string::npos) << second.out;
  expect_same_run("full", "old");
  json after = json::parse(test::read_file(dir / "old/checkpoint-20/trainer_state.json"));
  EXPECT_FALSE(after.contains("trainrun"));
  EXPECT_EQ(json::parse(test::read_file(dir / "old/checkpoint-20/trainrun_state.json"))["ranks"].size(), 1u);
}

TEST_F(Checkpoint, KilledMidEpochAfterAStepCheckpointResumesBitIdentical) {
  std::string more = "output.save_every=3 data.max_train_samples=1280";  // 40 steps, checkpoints every 3
  ASSERT_EQ(test::run(args("full", more)).code, 0);
  // SIGKILL as soon as checkpoint-3 exists: no chance to save anything more.
  auto killed = script(args("killed", more) + " >/dev/null 2>&1 & P=$!\n" + wait_for("killed/checkpoint-3") +
                       "kill -9 $P; wait $P; echo rc=$?\n");
  EXPECT_NE(killed.out.find("rc=137"), std::string::npos) << killed.out;
  ASSERT_FALSE(fs::exists(dir / "killed/model.safetensors"));
  auto resumed = test::run(args("killed", more));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Continuing training from global step "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("Continuing training from epoch 0"), std::string::npos) << resumed.out;
  expect_same_run("full", "killed");
  // keep_last 3 (the best one may be kept too).
  auto kept = folders(dir / "killed");
  EXPECT_LE(kept.size(), 5u);
  EXPECT_NE(std::find(kept.begin(), kept.end(), "checkpoint-40"), kept.end());
}

TEST_F(Checkpoint, TwoProcessesResumeBitIdenticalAndAfterARestart) {
  std::string two = "world.nproc_per_node=2";
  ASSERT_EQ(test::run(args("full", two)).code, 0);
  // Stopped mid-epoch (5 steps per epoch): every rank stops after step 7 and resumes there.
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args("split", two + " output.save_every=never"));
  EXPECT_EQ(first.code, 130) << first.err;
  EXPECT_TRUE(folders(dir / "split").empty());  // save_every: never means no checkpoint at all
  first = test::run("TRAINRUN_INTERRUPT_AT_STEP=7 " + args("split", two));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  EXPECT_TRUE(fs::exists(dir / "split/checkpoint-7/trainer_state.json"));
  auto second = test::run(args("split", two));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find("Will skip the first 2 batches in the first epoch"), std::string::npos) << second.out;
  expect_same_run("full", "split");

  // A rank killed after a step checkpoint: world.max_restarts relaunches and continues from it.
  std::string cmd = args("restart", two + " world.max_restarts=1 output.save_every=2");
  auto r = script(cmd + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!\n" + wait_for("restart/checkpoint-4") +
                  "for p in $(pgrep -P $L); do grep -qx trainrun-rank1 /proc/$p/comm && kill -9 $p; done\n"
                  "wait $L; echo rc=$?\n");
  std::string out = test::read_file(dir / "out"), err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << err;
  EXPECT_NE(err.find("restarting the world (restart 1 of 1)"), std::string::npos) << err;
  EXPECT_NE(out.find("Restart 1 of the world: resuming from the newest checkpoint"), std::string::npos) << out;
  expect_same_run("full", "restart");
}

// A real Ctrl-C on the launcher: forwarded to both workers, which stop after the same step,
// save, and exit 130; running the command again finishes the run as if never stopped.
TEST_F(Checkpoint, SigintSavesStopsEveryRankAndResumes) {
  std::string more = "world.nproc_per_node=2 data.max_train_samples=1280 output.save_every=never";
  ASSERT_EQ(test::run(args("full", more)).code, 0);
  more = "world.nproc_per_node=2 data.max_train_samples=1280 output.save_every=1000";  // only the interrupt saves
  auto r = script(args("run", more) + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!\n" +
                  "for i in $(seq 1500); do grep -q loss " + (dir / "out") + " && break; sleep 0.02; done\n" +
                  "W=$(pgrep -P $L); kill -INT $L; wait $L; echo rc=$?; sleep 0.5\n"
                  "for p in $W; do kill -0 $p 2>/dev/null && echo left-behind; done\n");
  std::string err = test::read_file(dir / "err");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out << err;
  EXPECT_EQ(r.out.find("left-behind"), std::string::npos) << r.out;
  auto saved = folders(dir / "run");
  saved.erase(std::remove(saved.begin(), saved.end(), "checkpoint-best"), saved.end());
  ASSERT_EQ(saved.size(), 1u) << err;  // the interrupt's checkpoint
  EXPECT_NE(err.find("interrupted (Interrupt) at step "), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
  auto resumed = test::run(args("run", more));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resuming from " + (dir / ("run/" + saved[0]))), std::string::npos) << resumed.out;
  expect_same_run("full", "run");
}

// early_stopping's strikes are saved with each checkpoint (trainer_state.json's
// stateful_callbacks, as transformers writes them): a run interrupted after the first strike and
// resumed stops at the same step, with the same files, as the uninterrupted one; before, the
// resumed run counted afresh and trained 4 steps more. A run that stopped early is over: resuming
// it trains nothing.
TEST_F(Checkpoint, EarlyStoppingResumedAfterAStrikeStopsWhereTheUninterruptedRunDoes) {
  // Evaluations at steps 2 (the best), 4 (strike 1) and 6 (strike 2: stop); 20 steps planned.
  const std::string more = "train.eval_every=2 output.save_every=2"
                           " 'callbacks=[{name: early_stopping, metric: accuracy, patience: 2, threshold: 1.0}]'";
  auto full = test::run(args("full", more));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_NE(full.out.find("Early stopping at step 6"), std::string::npos) << full.out;
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=4 " + args("split", more));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  json at4 = json::parse(test::read_file(dir / "split/checkpoint-4/trainer_state.json"))["stateful_callbacks"];
  EXPECT_EQ(at4["EarlyStoppingCallback"]["attributes"]["early_stopping_patience_counter"], 1) << at4.dump();
  EXPECT_EQ(at4["EarlyStoppingCallback"]["args"]["early_stopping_patience"], 2) << at4.dump();
  EXPECT_EQ(at4["TrainerControl"]["args"]["should_training_stop"], false) << at4.dump();  // an interrupt: not over
  auto second = test::run(args("split", more));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find("Early stopping at step 6"), std::string::npos) << second.out;
  expect_same_run("full", "split");
  EXPECT_EQ(folders(dir / "full"), folders(dir / "split"));
  json full6 = json::parse(test::read_file(dir / "full/checkpoint-6/trainer_state.json"));
  json split6 = json::parse(test::read_file(dir / "split/checkpoint-6/trainer_state.json"));
  EXPECT_EQ(full6["stateful_callbacks"], split6["stateful_callbacks"]);
  EXPECT_EQ(full6["stateful_callbacks"]["TrainerControl"]["args"]["should_training_stop"], true) << full6.dump();
  EXPECT_EQ(full6["log_history"].size(), split6["log_history"].size());

  // Resumed once more (output.resume: auto): nothing trains, the weights stay the run's.
  const std::string weights = test::read_file(dir / "split/model.safetensors");
  const std::size_t lines = test::read_jsonl(dir / "split/metrics.jsonl").size();
  auto again = test::run(args("split", more));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, dir / "split" + ": finished at step 6 (stopped early by a callback in epoch 0.6 of 2); nothing to train\n");
  auto after = test::read_jsonl(dir / "split/metrics.jsonl");
  for (std::size_t i = lines; i < after.size(); ++i) EXPECT_FALSE(after[i].contains("loss")) << after[i].dump();
  EXPECT_TRUE(test::read_file(dir / "split/model.safetensors") == weights);
}

// reduce_on_plateau's decisions (scheduler.json: best, counters, lrs) and radam's state
// (optimizer.pt, a LibTorch-less optimizer of ours) survive an interruption: the resumed run is
// the uninterrupted one, lr cuts included.
TEST_F(Checkpoint, ReduceOnPlateauAndRadamResumeBitIdentical) {
  // Evaluations every 2 steps; a threshold of 90% makes every evaluation after the first a bad one.
  const std::string more = "train.eval_every=2 output.save_every=2 output.keep_last=20 'optimizer={name: radam, lr: 0.003}'"
                           " 'scheduler={name: reduce_on_plateau, patience: 1, factor: 0.5, threshold: 0.9}'";
  auto full = test::run(args("full", more));
  ASSERT_EQ(full.code, 0) << full.err;
  auto first = test::run("TRAINRUN_INTERRUPT_AT_STEP=8 " + args("split", more));
  ASSERT_EQ(first.code, 130) << first.out << first.err;
  auto second = test::run(args("split", more));
  ASSERT_EQ(second.code, 0) << second.err;
  expect_same_run("full", "split");
  EXPECT_EQ(test::by_step(dir / "full/metrics.jsonl", "learning_rate"), test::by_step(dir / "split/metrics.jsonl", "learning_rate"));
  json at8 = json::parse(test::read_file(dir / "split/checkpoint-8/scheduler.json"));
  EXPECT_EQ(at8, json::parse(test::read_file(dir / "full/checkpoint-8/scheduler.json")));
  // Bad evaluations at steps 4, 6, 8, ...: a cut every second one (patience 1) from step 6 on.
  EXPECT_EQ(at8["lrs"], json::array({0.0015})) << at8.dump();
  EXPECT_EQ(at8["num_bad_epochs"], 1) << at8.dump();
  json at20 = json::parse(test::read_file(dir / "split/checkpoint-20/scheduler.json"));
  EXPECT_LT(at20["lrs"][0].get<double>(), 0.0015) << at20.dump();
}

TEST_F(Checkpoint, KeepLastRotatesButKeepsTheBest) {
  // A learning rate that first helps and then ruins the model: the best checkpoint is an early one.
  std::string more = "train.epochs=1 output.save_every=1 train.eval_every=1 output.keep_last=2 data.max_eval_samples=200 "
                     "'scheduler={name: constant}' optimizer.lr=0.03";
  auto r = test::run(args("run", more));
  ASSERT_EQ(r.code, 0) << r.err;
  auto evals = test::by_step(dir / "run/metrics.jsonl", "eval_loss");
  ASSERT_EQ(evals.size(), 10u);
  int64_t best = std::min_element(evals.begin(), evals.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  std::vector<std::string> expect{"checkpoint-10", "checkpoint-9", "checkpoint-best"};
  if (best < 9) expect.push_back("checkpoint-" + std::to_string(best));
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(folders(dir / "run"), expect);
  EXPECT_LT(best, 9) << "the recipe no longer makes an early checkpoint the best; pick a worse learning rate";
  EXPECT_EQ(fs::read_symlink(dir / "run/checkpoint-best").string(), "checkpoint-" + std::to_string(best));
  json state = json::parse(test::read_file(dir / "run/checkpoint-10/trainer_state.json"));
  EXPECT_EQ(state["best_metric"].get<double>(), evals[best]);
  EXPECT_EQ(state["best_model_checkpoint"], dir / ("run/checkpoint-" + std::to_string(best)));

  // Greater is better for accuracy; keep_last null keeps everything.
  r = test::run(args("acc", more + " output.best_metric=accuracy output.keep_last=null"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(folders(dir / "acc").size(), 11u);
  auto accs = test::by_step(dir / "acc/metrics.jsonl", "eval_accuracy");
  double top = 0;
  for (auto& [_, a] : accs) top = std::max(top, a);
  EXPECT_EQ(json::parse(test::read_file(dir / "acc/checkpoint-10/trainer_state.json"))["best_metric"].get<double>(), top);
}

TEST_F(Checkpoint, UnfinishedCheckpointsAreNeverPicked) {
  ASSERT_EQ(test::run(args("run", "train.epochs=1")).code, 0);
  // What a crash during a save leaves: a temporary folder, and a folder without its
  // trainer_state.json (copied by hand, say).
  fs::create_directories(dir / "run/.checkpoint-15.tmp");
  test::write_file(dir / "run/.checkpoint-15.tmp/model.safetensors", "partial");
  fs::create_directories(dir / "run/checkpoint-12");
  fs::copy_file(dir / "run/checkpoint-10/model.safetensors", dir / "run/checkpoint-12/model.safetensors");
  auto r = test::run(args("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Resuming from " + (dir / "run/checkpoint-10")), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "run/.checkpoint-15.tmp"));
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-20/trainer_state.json"));

  auto bad = test::run(args("run", "output.resume=" + (dir / "run/checkpoint-12")));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("output.resume: " + (dir / "run/checkpoint-12") + ": not a complete checkpoint"), std::string::npos)
      << bad.err;
  bad = test::run(args("other", "output.resume=" + (dir / "run/checkpoint-99")));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("output.resume: " + (dir / "run/checkpoint-99") + ": no such checkpoint"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(dir / "other"));

  // An explicit PATH continues from there into another folder; never starts afresh.
  auto from = test::run(args("other", "output.resume=" + (dir / "run/checkpoint-10")));
  ASSERT_EQ(from.code, 0) << from.err;
  EXPECT_NE(from.out.find("Continuing training from global step 10"), std::string::npos);
  EXPECT_TRUE(test::read_file(dir / "other/model.safetensors") == test::read_file(dir / "run/model.safetensors"));
  auto fresh = test::run(args("run", "output.resume=never train.epochs=1"));
  ASSERT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_EQ(fresh.out.find("Continuing training"), std::string::npos);

  // trainrun eval takes a checkpoint folder.
  double acc = test::by_step(dir / "run/metrics.jsonl", "eval_accuracy").at(10);
  test::eval_printing_accuracy(test::source("recipes/quickstart.yaml") + " data.max_eval_samples=500 --checkpoint " +
                                   (dir / "run/checkpoint-10"),
                               acc);
}

// A checkpoint whose small files lie: one line naming the file and what is wrong, exit 1, the
// checkpoint left as it was. Found by fuzz/checkpoint_fuzz.cpp (fuzz/regressions/checkpoint/):
// a scaler.json without growth_tracker escaped as a bare json out_of_range, a world_size of 0
// or a negative scheduler step were taken, and a global_step of 1e106 was converted to int64
// (undefined behaviour, UBSan).
TEST_F(Checkpoint, LyingCheckpointFilesAreOneClearLine) {
  ASSERT_EQ(test::run(args("run", "train.epochs=1 train.eval_every=never")).code, 0);
  const fs::path good = dir / "run/checkpoint-10";
  auto edit = [&](const std::string& file, const std::string& from, const std::string& to) {
    fs::path copy = dir / ("bad-" + std::to_string(std::hash<std::string>()(file + to)));
    fs::copy(good, copy, fs::copy_options::recursive);
    std::string text = test::read_file(copy / file);
    EXPECT_NE(text.find(from), std::string::npos) << file << ": " << text;
    text.replace(text.find(from), from.size(), to);
    test::write_file(copy / file, text);
    return copy;
  };
  for (auto [file, from, to, line] : std::vector<std::array<std::string, 4>>{
           {"scaler.json", "\"growth_tracker\"", "\"growth\"", "/scaler.json: [json.exception.out_of_range.403] key 'growth_tracker' not found"},
           {"scaler.json", "65536.0", "-1.0", "/scaler.json: expected a finite scale > 0 and a growth_tracker >= 0"},
           {"trainrun_state.json", "\"world_size\": 1", "\"world_size\": 0", "/trainrun_state.json: world_size is 0, expected >= 1"},
           {"trainer_state.json", "\"global_step\": 10", "\"global_step\": 1e106", "/trainer_state.json: global_step: expected a whole number, got 1e+106"},
           {"scheduler.json", "\"step\": 10", "\"step\": -3", "/scheduler.json: scheduler state: step is -3, expected >= 0"}}) {
    fs::path bad = edit(file, from, to);
    std::string before = test::read_file(bad / file);
    auto r = test::run(args("resumed", "output.resume=" + bad.string()));
    EXPECT_EQ(r.code, 1) << file << " " << to << "\n" << r.err;
    EXPECT_NE(r.err.find(bad.string() + line), std::string::npos) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(test::read_file(bad / file), before);
  }
}

// Found before anything starts (exit 2); the file in the way is left alone.
TEST_F(Checkpoint, UnwritableFolderIsAClearError) {
  test::write_file(dir / "file", "not a folder");
  auto r = test::run(args("file/run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "output.dir: " + (dir / "file/run") + ": " + (dir / "file") + " is a file, not a folder\n");
  EXPECT_EQ(test::read_file(dir / "file"), "not a folder");
}

TEST_F(Checkpoint, FullDiskKeepsTheOlderCheckpoints) {
  // A 20 MB tmpfs holds one BasicNet checkpoint (weights 4.8 MB + AdamW state 9.6 MB), not two.
  fs::create_directories(dir / "small");
  auto m = test::run("mount -t tmpfs -o size=20m tmpfs " + (dir / "small"));
  if (m.code != 0) GTEST_SKIP() << "cannot mount a tmpfs here: " << m.err;
  auto r = test::run(args("small/run", "output.save_every=2 train.eval_every=never"));
  bool older_kept = fs::exists(dir / "small/run/checkpoint-2/trainer_state.json");
  bool no_partial = !fs::exists(dir / "small/run/checkpoint-4") && !fs::exists(dir / "small/run/.checkpoint-4.tmp");
  test::run("umount " + (dir / "small"));
  EXPECT_TRUE(older_kept);
  EXPECT_TRUE(no_partial);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot save " + (dir / "small/run/checkpoint-4")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("older checkpoints are kept"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainrun
