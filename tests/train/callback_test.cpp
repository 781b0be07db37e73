// The Trainer's events and callbacks: the order a run fires them in, a callback's requests
// (evaluate, save, stop) honoured by the loop, early_stopping from a recipe, and callbacks from
// a plugin built outside the tree (examples/custom_callback).
#include "runner/recipe/job.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/io/weights.h"
#include "runner/train/trainer.h"
#include "test_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace trainrun {
namespace {

// Records every event as a short word; optionally asks for an evaluation and a save at a step
// and to stop after another.
class Recorder : public Callback {
 public:
  std::vector<std::string> events;
  int64_t save_at = -1, stop_at = -1;

  void on_init_end(Trainer&) override { events.push_back("init"); }
  void on_train_begin(Trainer&, TrainerControl&) override { events.push_back("begin"); }
  void on_epoch_begin(Trainer& t, TrainerControl&) override {
    events.push_back("epoch" + std::to_string(t.state().epoch_index));
  }
  void on_pre_optimizer_step(Trainer&, TrainerControl&) override { events.push_back("pre"); }
  void on_step_end(Trainer& t, TrainerControl& c) override {
    events.push_back("step" + std::to_string(t.state().global_step));
    if (t.state().global_step == save_at) c.should_evaluate = c.should_save = true;
    if (t.state().global_step == stop_at) c.should_training_stop = true;
  }
  void on_log(Trainer&, const nlohmann::ordered_json& line) override {
    events.push_back(line.contains("eval_loss") ? "log:eval" : line.contains("loss") ? "log:train" : "log:summary");
  }
  void on_evaluate(Trainer&, TrainerControl&, const EvalResult&, const nlohmann::ordered_json&) override {
    events.push_back("evaluate");
  }
  void on_save(Trainer&, TrainerControl&) override { events.push_back("save"); }
  void on_epoch_end(Trainer&, TrainerControl&) override { events.push_back("epoch_end"); }
  void on_loop_end(Trainer&, TrainerControl&) override { events.push_back("loop_end"); }
  void on_train_end(Trainer&, TrainerControl&) override { events.push_back("end"); }
};

// Every event, with the micro-batch ones, as short words.
class FullRecorder : public Recorder {
 public:
  void on_step_begin(Trainer&, TrainerControl&) override { events.push_back("step_begin"); }
  void on_train_batch_begin(Trainer&, TrainBatch& b) override { events.push_back("batch" + std::to_string(b.index_in_epoch)); }
  void on_before_backward(Trainer&, const TrainBatch&, StepOutput&) override { events.push_back("loss"); }
  void on_after_backward(Trainer&, const TrainBatch&) override { events.push_back("backward"); }
  void on_optimizer_step(Trainer&, TrainerControl&) override { events.push_back("opt"); }
  void on_evaluate_begin(Trainer&, TrainerControl&) override { events.push_back("eval_begin"); }
  void on_save_checkpoint(Trainer& t, CheckpointFiles&) override {
    events.push_back("checkpoint" + std::to_string(t.state().global_step));
  }
  void on_exception(Trainer&, const std::exception& e) override { events.push_back(std::string("exception:") + e.what()); }
};

double global_norm(Classifier& model) {
  double sum = 0;
  for (auto& p : model.parameters())
    if (p.grad().defined()) sum += p.grad().pow(2).sum().item<double>();
  return std::sqrt(sum);
}

class Callbacks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  // 2 epochs of 2 steps (128 examples, batch 32, accumulation 2), one process in this one.
  Job job(const std::vector<std::string>& more = {}) {
    std::vector<std::string> o = {"data.max_train_samples=128", "data.max_eval_samples=100", "data.batch_size=32",
                                  "data.workers=0",             "train.epochs=2",            "train.grad_accum_steps=2",
                                  "train.log_every_steps=1",    "world.nproc_per_node=1",    "world.threads_per_proc=1",
                                  "output.dir=" + (dir / "run")};
    o.insert(o.end(), more.begin(), more.end());
    return build_job(load_recipe(test::source("recipes/quickstart.yaml"), o));
  }
  std::vector<std::string> run(Job& j, const std::shared_ptr<Recorder>& recorder) {
    auto callbacks = all_callbacks(j);
    callbacks.push_back(recorder);
    TrainLoop trainer(j, WorldInfo{}, callbacks);
    trainer.train();
    return recorder->events;
  }
  test::TempDir dir;
};

TEST_F(Callbacks, EventsFireInTheTrainersOrder) {
  Job j = job();
  auto events = run(j, std::make_shared<Recorder>());
  std::vector<std::string> want = {"init", "begin",
                                   "epoch0", "pre", "step1", "log:train", "pre", "step2", "log:train",
                                   "epoch_end", "log:eval", "evaluate", "save",
                                   "epoch1", "pre", "step3", "log:train", "pre", "step4", "log:train",
                                   "epoch_end", "log:eval", "evaluate", "save",
                                   "loop_end", "save", "end", "log:summary"};
  EXPECT_EQ(events, want) << ::testing::PrintToString(events);
}

TEST_F(Callbacks, MicroBatchEventsFireInOrder) {
  Job j = job();
  auto events = run(j, std::make_shared<FullRecorder>());
  const std::vector<std::string> step = {"step_begin", "batch0", "loss", "backward", "batch1", "loss", "backward",
                                         "pre", "opt"};
  std::vector<std::string> want = {"init", "begin", "epoch0"};
  auto add = [&](std::vector<std::string> more) { want.insert(want.end(), more.begin(), more.end()); };
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    if (epoch == 1) add({"epoch1"});
    for (int64_t k = 1; k <= 2; ++k) {
      add(step);
      want[want.size() - 8] = "batch" + std::to_string(2 * (k - 1));  // micro-batch index in the epoch
      want[want.size() - 5] = "batch" + std::to_string(2 * (k - 1) + 1);
      add({"step" + std::to_string(epoch * 2 + k), "log:train"});
    }
    // A checkpoint is written once a step (at loop_end, step 4 has one): on_save fires for the ask.
    add({"epoch_end", "eval_begin", "log:eval", "evaluate", "checkpoint" + std::to_string(epoch * 2 + 2), "save"});
  }
  add({"loop_end", "save", "end", "log:summary"});
  EXPECT_EQ(events, want) << ::testing::PrintToString(events);
}

// What the events carry: the batch and loss a callback may change, gradients after clipping at
// on_pre_optimizer_step (grad_norm() the norm before), gradients not yet zeroed at
// on_optimizer_step, files added to a checkpoint.
class Inspector : public Callback {
 public:
  std::vector<double> norm_before, norm_seen, norm_after_step;
  bool zero_loss = false;
  int64_t replaced = 0;
  void on_train_batch_begin(Trainer&, TrainBatch& b) override {
    // Class indices replaced by the same classes as probabilities: cross_entropy is unchanged.
    b.targets = soft_targets(b.targets, 10);
    ++replaced;
  }
  void on_before_backward(Trainer&, const TrainBatch& b, StepOutput& out) override {
    EXPECT_EQ(b.targets.dim(), 2);
    if (zero_loss) out.loss = out.loss * 0.0;
  }
  void on_pre_optimizer_step(Trainer& t, TrainerControl&) override {
    ASSERT_TRUE(t.grad_norm().has_value());
    norm_before.push_back(*t.grad_norm());
    norm_seen.push_back(global_norm(t.model()));
  }
  void on_optimizer_step(Trainer& t, TrainerControl&) override { norm_after_step.push_back(global_norm(t.model())); }
  void on_save_checkpoint(Trainer& t, CheckpointFiles& files) override {
    files.add("inspector.json", "{\"step\": " + std::to_string(t.state().global_step) + "}\n");
    EXPECT_THROW(files.add("model.safetensors", "x"), TrainingError);
    EXPECT_THROW(files.add("../escape", "x"), TrainingError);
  }
};

TEST_F(Callbacks, EventsCarryTheBatchTheLossAndClippedGradients) {
  Job j = job({"train.loss=cross_entropy", "train.max_grad_norm=0.01"});
  auto inspector = std::make_shared<Inspector>();
  auto callbacks = all_callbacks(j);
  callbacks.push_back(inspector);
  TrainLoop(j, WorldInfo{}, callbacks).train();
  EXPECT_EQ(inspector->replaced, 8);
  ASSERT_EQ(inspector->norm_before.size(), 4u);
  std::vector<nlohmann::json> lines;
  for (auto& l : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (l.contains("grad_norm")) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_GT(inspector->norm_before[k], 0.01);               // clipping had work to do
    EXPECT_NEAR(inspector->norm_seen[k], 0.01, 1e-4);          // and was done before the event
    EXPECT_NEAR(inspector->norm_after_step[k], 0.01, 1e-4);    // gradients still there after the step
    EXPECT_DOUBLE_EQ(lines[k]["grad_norm"].get<double>(), inspector->norm_before[k]);
  }
  EXPECT_EQ(test::read_file(dir / "run/checkpoint-4/inspector.json"), "{\"step\": 4}\n");

  // A loss a callback zeroes trains nothing: plain SGD leaves every weight where it started.
  Job k = job({"train.loss=cross_entropy", "optimizer={name: sgd, lr: 0.1}", "output.dir=" + (dir / "zero")});
  auto before = state_dict(*k.model);
  for (auto& [name, t] : before) t = t.clone();
  auto zeroing = std::make_shared<Inspector>();
  zeroing->zero_loss = true;
  auto more = all_callbacks(k);
  more.push_back(zeroing);
  TrainLoop(k, WorldInfo{}, more).train();
  auto after = state_dict(*k.model);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].second.equal(before[i].second)) << after[i].first;
}

class Thrower : public Callback {
 public:
  void on_step_end(Trainer& t, TrainerControl&) override {
    if (t.state().global_step == 2) throw TrainingError("thrown at step 2");
  }
};

TEST_F(Callbacks, AFailureReachesOnException) {
  Job j = job();
  auto recorder = std::make_shared<FullRecorder>();
  auto callbacks = all_callbacks(j);
  callbacks.push_back(std::make_shared<Thrower>());
  callbacks.push_back(recorder);
  EXPECT_THROW(TrainLoop(j, WorldInfo{}, callbacks).train(), TrainingError);
  EXPECT_EQ(recorder->events.back(), "exception:thrown at step 2");
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "end"), 0);
}

TEST_F(Callbacks, ACallbacksRequestsAreHonoured) {
  Job j = job({"output.save_every=never", "train.eval_every=never"});
  auto recorder = std::make_shared<Recorder>();
  recorder->save_at = 1;
  recorder->stop_at = 3;
  auto events = run(j, recorder);
  // Step 1: evaluated and saved as asked; the request reaches on_save (with save_every: never
  // the built-in checkpoint callback writes nothing).
  auto at = std::find(events.begin(), events.end(), "step1");
  ASSERT_NE(at, events.end());
  EXPECT_EQ(std::vector<std::string>(at, at + 5),
            (std::vector<std::string>{"step1", "log:train", "log:eval", "evaluate", "save"}));
  // Stopped after step 3 (mid-epoch): no step 4, and the run ends as a finished one.
  EXPECT_EQ(std::count(events.begin(), events.end(), "step4"), 0);
  auto tail = std::vector<std::string>(events.end() - 4, events.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"loop_end", "save", "end", "log:summary"}));
  auto lines = test::read_jsonl(dir / "run/metrics.jsonl");
  EXPECT_EQ(lines.back()["step"], 3);
  EXPECT_DOUBLE_EQ(lines.back()["epoch"].get<double>(), 1.5);
  EXPECT_FALSE(std::filesystem::exists(dir / "run/checkpoint-1"));
}

TEST_F(Callbacks, SaveRequestWritesACheckpointAtThatStep) {
  Job j = job({"output.save_every=epoch"});
  auto recorder = std::make_shared<Recorder>();
  recorder->save_at = 1;
  run(j, recorder);
  for (const char* c : {"checkpoint-1", "checkpoint-2", "checkpoint-4"})
    EXPECT_TRUE(std::filesystem::exists(dir / ("run/" + std::string(c) + "/trainer_state.json"))) << c;
  // checkpoint-1 holds the evaluation asked for with it.
  auto state = nlohmann::json::parse(test::read_file(dir / "run/checkpoint-1/trainer_state.json"));
  EXPECT_TRUE(state["log_history"].back().contains("eval_loss")) << state.dump();
}

TEST_F(Callbacks, EarlyStoppingFromTheRecipe) {
  // An improvement of more than 1.0 in accuracy cannot happen: the second evaluation stops.
  auto r = test::run(test::trainrun(
      test::source("recipes/quickstart.yaml") +
      " data.max_train_samples=640 data.max_eval_samples=100 train.epochs=3 train.eval_every=3"
      " world.nproc_per_node=1 output.save_every=never output.dir=" + (dir / "es") +
      " 'callbacks=[{name: early_stopping, metric: accuracy, patience: 1, threshold: 1.0}]'"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Early stopping at step 6: eval_accuracy has not improved on"), std::string::npos) << r.out;
  auto lines = test::read_jsonl(dir / "es/metrics.jsonl");
  EXPECT_EQ(lines.back()["step"], 6);
  int evals = 0;
  for (auto& l : lines) evals += l.contains("eval_loss");
  EXPECT_EQ(evals, 2);
}

TEST_F(Callbacks, UnknownCallbackIsARecipeError) {
  auto r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") +
                                    " 'callbacks=[{name: early_stoping}]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("callbacks[0].name: unknown callback 'early_stoping' (did you mean 'early_stopping'?)"),
            std::string::npos) << r.err;
  r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") +
                               " 'callbacks=[{name: early_stopping, patience: 0}]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("callbacks[0].patience"), std::string::npos) << r.err;
}

TEST_F(Callbacks, ListAndDescribeShowRegisteredCallbacks) {
  auto r = test::run(test::trainrun("list callbacks"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("early_stopping"), std::string::npos) << r.out;
  r = test::run(test::trainrun("describe callbacks/early_stopping"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("patience"), std::string::npos) << r.out;
}

// examples/custom_callback: a CSV logger built as a plugin outside the tree, named in a recipe.
TEST_F(Callbacks, PluginCallbackFromARecipe) {
  auto r = test::run(test::trainrun(
      test::source("examples/custom_callback/recipe.yaml") + " 'plugins=[" CSV_LOGGER_PLUGIN "]'" +
      " data.max_train_samples=640 data.max_eval_samples=200 output.dir=" + (dir / "csv")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream csv(dir / "csv/metrics.csv");
  std::string header, row;
  ASSERT_TRUE(std::getline(csv, header)) << r.out;
  EXPECT_EQ(header, "step,epoch,loss,learning_rate,eval_loss,eval_accuracy");
  // One row per training or evaluation line of metrics.jsonl, with its numbers.
  std::vector<nlohmann::json> lines;
  for (auto& l : test::read_jsonl(dir / "csv/metrics.jsonl"))
    if (l.contains("loss") || l.contains("eval_loss")) lines.push_back(l);
  std::size_t i = 0;
  for (; std::getline(csv, row); ++i) {
    ASSERT_LT(i, lines.size()) << row;
    EXPECT_EQ(row.substr(0, row.find(',')), std::to_string(lines[i]["step"].get<int64_t>())) << row;
    if (lines[i].contains("loss")) {
      EXPECT_NE(row.find(fmt::format("{}", lines[i]["loss"].get<double>())), std::string::npos) << row;
    }
  }
  EXPECT_EQ(i, lines.size());

  r = test::run(test::trainrun("check " + test::source("examples/custom_callback/recipe.yaml") +
                               " 'plugins=[/nonexistent/libnothing.so]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("plugins[0]: cannot load /nonexistent/libnothing.so"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainrun
