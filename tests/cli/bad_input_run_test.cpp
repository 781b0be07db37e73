// Bad inputs met once a run has started (docs/reference/bad-inputs.md; the fixture:
// bad_input.h): the run folder, the launcher and its ports, the loss, the output folder, signals,
// a killed rank, resuming with another optimizer.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

// output.resume: auto in a run folder that holds another job's checkpoint (runner/recipe/resume_plan.h):
// refused before anything is written, naming the keys that differ. (`check` says the same in its
// `run folder:` line and exits 0: a recipe is often checked away from the machine that runs it.)
TEST_F(BadInput, RunFolderOfAnotherJob) {
  auto first = test::run(test::trainrun(recipe()));
  ASSERT_EQ(first.code, 0) << first.err;
  const auto before = test::snapshot(dir / "run");
  auto r = test::run(test::trainrun(recipe() + " optimizer.lr=3e-4 seed=7"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, (dir / "run") + " holds another run: seed 42 -> 7, optimizer.lr 0.001 -> 0.0003; use output.dir=..., or "
                                   "output.resume=never to start over in it\n");
  EXPECT_EQ(test::snapshot(dir / "run"), before);
  saw(r.err, r.code);
}

TEST_F(BadInput, BusyPort) {
  LoopbackPort busy(/*listen=*/true);
  auto r = test::run(test::trainrun(recipe() + " world.nproc_per_node=2 world.master_port=" + std::to_string(busy.port())));
  shown_as("port " + std::to_string(busy.port()), "port <port>");
  expect_err(r, 2, "world.master_port: port " + std::to_string(busy.port()) +
                       " on 127.0.0.1 is not free (Address already in use); pick another, or 0 for any free port\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Node 1 of 2 whose master (node 0) never comes up: refused until world.timeout_s, then rank 1
// says where it looked and the launcher which rank failed.
TEST_F(BadInput, UnreachableMaster) {
  LoopbackPort nobody(/*listen=*/false);
  const std::string at = "127.0.0.1:" + std::to_string(nobody.port());
  auto r = test::run(test::trainrun(recipe() + " world.nnodes=2 world.node_rank=1 world.timeout_s=2 world.master_port=" +
                                    std::to_string(nobody.port())));
  shown_as(at, "127.0.0.1:<port>");
  expect_err(r, 1, "rank 1: cannot reach the rendezvous at " + at + " within 2 s: no connection accepted\n"
                   "trainrun: rank 1 exited with code 1\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Node 1 of 2 whose master port belongs to a program that accepts connections and never answers
// (the TCPStore client's handshake has no time limit of its own): rank 1 still gives up at
// world.timeout_s, with the same line as an unreachable master, while the listener stays open.
// "At world.timeout_s" is measured against the unreachable master's run, which has the same
// deadline and the same two process starts (several seconds each under ASan on a slow VM).
TEST_F(BadInput, SilentMaster) {
  auto timed = [&](int port) {
    const auto start = std::chrono::steady_clock::now();
    auto r = test::run(test::trainrun(recipe() + " world.nnodes=2 world.node_rank=1 world.timeout_s=2 world.master_port=" +
                                      std::to_string(port)));
    return std::make_pair(r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  LoopbackPort nobody(/*listen=*/false);
  const auto [refused, unreachable_s] = timed(nobody.port());
  ASSERT_EQ(refused.code, 1) << refused.err;
  LoopbackPort silent(/*listen=*/true);
  const std::string at = "127.0.0.1:" + std::to_string(silent.port());
  const auto [r, seconds] = timed(silent.port());
  shown_as(at, "127.0.0.1:<port>");
  expect_err(r, 1, "rank 1: cannot reach the rendezvous at " + at +
                       " within 2 s: something accepts connections there but does not answer as a c10d store\n"
                       "trainrun: rank 1 exited with code 1\n");
  EXPECT_LT(seconds, unreachable_s + 3) << "world.timeout_s=2 did not bound the wait (an unreachable master: "
                                        << unreachable_s << " s)";
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, BadLauncherVariables) {
  expect_err(test::run("RANK=x WORLD_SIZE=2 " + test::trainrun(recipe())), 2,
             "RANK=x: expected a whole number >= 0 (set by the launcher that started trainrun, or by hand)\n");
  expect_err(test::run("RANK=2 WORLD_SIZE=2 " + test::trainrun(recipe())), 2,
             "rank 2 is outside a world of 2 (check RANK / WORLD_SIZE)\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, MoreProcessesThanExamples) {
  expect_bad_input(recipe() + " world.nproc_per_node=2 data.max_train_samples=1",
                   "world: 2 processes for 1 training examples; every process needs at least one (fewer processes, or "
                   "more data)");
}

TEST_F(BadInput, Fp16OnCpu) {
  expect_bad_input(recipe() + " precision=fp16",
                   "precision: fp16 needs a CUDA device (this run is on cpu); use bf16 or fp32 on CPU, or precision: auto");
}

// The example whose white pixel makes the loss nan is the 21st the shuffled epoch meets
// (DistributedSampler's torch.randperm(256) seeded with seed + epoch), so in the 3rd batch of 8.
TEST_F(BadInput, NanLoss) {
  auto generator = at::detail::createCPUGenerator(42);
  test::write_black_mnist(dir / "black", 256, int(torch::randperm(256, generator, torch::kLong)[20].item<int64_t>()));
  auto r = test::run(test::trainrun(recipe() + " data.dataset.root=" + (dir / "black") +
                                    " data.dataset.classes=null data.batch_size=8 output.save_every=1"
                                    " 'data.train_transforms=[to_tensor, {normalize: {mean: [0], std: [1e-39]}}]'"));
  expect_err(r, 1, "rank 0: step 3: loss is nan on rank 0; every rank stopped before the optimizer step (lower the "
                   "learning rate or check the data); checkpoints saved before it are kept\n");
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-2/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "run/checkpoint-3"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

// A read-only mount (root passes every permission check, not this one); the folder is left as it
// was. Found before anything starts, so exit 2.
TEST_F(BadInput, ReadOnlyOutputFolder) {
  fs::create_directories(dir / "ro/earlier");
  test::write_file(dir / "ro/earlier/labels.json", "{}\n");
  auto m = test::run("mount --bind -o ro " + (dir / "ro") + " " + (dir / "ro"));
  if (m.code != 0) GTEST_SKIP() << "cannot make a read-only bind mount here (needs root): " << m.err;
  auto before = contents(dir / "ro");
  auto r = test::run(test::trainrun(recipe() + " output.dir=" + (dir / "ro/run")));
  auto resumed = test::run(test::trainrun(recipe() + " output.dir=" + (dir / "ro/earlier")));
  auto after = contents(dir / "ro");
  test::run("umount " + (dir / "ro"));
  expect_err(r, 2, "output.dir: " + (dir / "ro/run") + ": cannot create it in " + (dir / "ro") + ": Read-only file system\n");
  expect_err(resumed, 2, "output.dir: " + (dir / "ro/earlier") + ": cannot write in it: Read-only file system\n");
  EXPECT_EQ(after, before);
}

// A 20 MB tmpfs holds one BasicNet checkpoint (weights 4.8 MB + AdamW state 9.6 MB), not two.
TEST_F(BadInput, FullOutputFolder) {
  fs::create_directories(dir / "small");
  auto m = test::run("mount -t tmpfs -o size=20m tmpfs " + (dir / "small"));
  if (m.code != 0) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << m.err;
  auto r = test::run(test::trainrun(recipe() + " output.save_every=2 train.eval_every=never output.dir=" + (dir / "small/run")));
  bool kept = fs::exists(dir / "small/run/checkpoint-2/trainer_state.json");
  bool partial = fs::exists(dir / "small/run/checkpoint-4") || fs::exists(dir / "small/run/.checkpoint-4.tmp");
  test::run("umount " + (dir / "small"));
  expect_err(r, 1, "rank 0: cannot save " + (dir / "small/run/checkpoint-4") + ": " + (dir / "small/run/.checkpoint-4.tmp") +
                       "/optimizer.pt: write failed: No space left on device (older checkpoints are kept)\n");
  EXPECT_TRUE(kept);
  EXPECT_FALSE(partial);
}

TEST_F(BadInput, Sigint) {
  expect_stopped_with_checkpoint("INT", "Interrupt", 130, "trainrun: interrupted; workers stopped");
}

TEST_F(BadInput, Sigterm) {
  expect_stopped_with_checkpoint("TERM", "Interrupt", 130, "trainrun: interrupted; workers stopped");
}

TEST_F(BadInput, Sigusr1) {
  expect_stopped_with_checkpoint("USR1", "User defined signal 1", 138,
                                 "trainrun: pre-empted (SIGUSR1); workers stopped after a checkpoint, exit 138 (requeue "
                                 "the job to resume)");
}

TEST_F(BadInput, KilledRank) {
  auto r = long_run_and("for p in $(pgrep -P $L); do grep -qx trainrun-rank1 /proc/$p/comm && kill -9 $p; done");
  std::string err = test::read_file(dir / "err");
  EXPECT_EQ(r.out, "rc=1\n") << err;
  EXPECT_EQ(last_line(err), "trainrun: rank 1 was killed by signal 9 (Killed)") << err;
  // Rank 0 hears of it from gloo (a closed or reset connection), in one line without the place
  // in gloo's sources.
  EXPECT_TRUE(std::regex_search(err, std::regex("(^|\n)rank 0: lost contact with another rank \\(gloo: [^\n]*127\\.0\\.0\\.1[^\n]*\\)\n")))
      << err;
  EXPECT_EQ(test::count_lines(err), 2) << err;
  saw("rank 0: lost contact with another rank (gloo: <gloo's message, naming 127.0.0.1>)\n" + last_line(err), 1);
  EXPECT_TRUE(fs::exists(dir / "run/labels.json"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

// `predict` reads the class names from the run's labels.json; one that is not a run's is named.
// Resuming (output.resume: auto) under a recipe whose optimizer cannot take the checkpoint's state:
// exit 2 before anything starts, the run folder as it was. LibTorch itself fails on it only once
// the run started (exit 1), with "is_tensor_type INTERNAL ASSERT FAILED ... please report a bug to
// PyTorch" for another optimizer. A compatible change (adamw -> adam) still resumes.
TEST_F(BadInput, ResumeWithAnotherOptimizer) {
  ASSERT_EQ(test::run(test::trainrun(recipe() + " train.eval_every=never")).code, 0);
  auto before = contents(dir / "run");
  const std::string saved = (dir / "run/checkpoint-8/optimizer.pt");
  const std::string tail = "it was saved with another optimizer, other no_decay groups or other freeze rules; "
                           "output.resume: never, or another output.dir, starts afresh";
  // Named as a PATH: output.resume: auto refuses another job's folder before this (RunFolderOfAnotherJob).
  const std::string from = " output.resume=" + (dir / "run/checkpoint-8");
  for (const std::string command : {"check ", ""}) {
    auto sgd = test::run(test::trainrun(command + recipe() + from + " train.epochs=2 optimizer.name=sgd"));
    expect_err(sgd, 2, "output.resume: " + saved + " does not fit optimizer sgd over 8 trainable tensors (its state is " +
                           "another optimizer's): " + tail + "\n");
    auto frozen = test::run(test::trainrun(command + recipe() + from + " train.epochs=2 'freeze=[{params: fc2.*, trainable: false}]'"));
    expect_err(frozen, 2, "output.resume: " + saved + " does not fit optimizer adamw over 6 trainable tensors (loaded state " +
                              "dict contains a parameter group that has a different size than the optimizer's parameter group): " +
                              tail + "\n");
  }
  EXPECT_EQ(contents(dir / "run"), before);
  auto adam = test::run(test::trainrun(recipe() + from + " train.epochs=2 train.eval_every=never optimizer.name=adam"));
  EXPECT_EQ(adam.code, 0) << adam.err;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-16"));
}

}  // namespace
}  // namespace trainrun::bad_input
