// The command line as a user meets it: exit codes and one-line errors (docs/reference/cli.md,
// docs/reference/exit-codes.md).
#include "test_util.h"

#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

namespace trainrun {
namespace {

using test::run;
using test::trainrun;

TEST(Cli, MisspeltOverrideExits2WithOneLineNamingKeyAndSuggestion) {
  auto r = run(trainrun("check " + test::source("recipes/quickstart.yaml") + " optimizer.lrr=1"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("optimizer.lrr"), std::string::npos);
  EXPECT_NE(r.err.find("did you mean 'lr'?"), std::string::npos);
  EXPECT_EQ(r.out, "");
}

TEST(Cli, MisspeltSectionNamesFileLineAndColumn) {
  test::TempDir dir;
  std::string recipe = test::read_file(test::source("recipes/quickstart.yaml"));
  auto at = recipe.find("optimizer:");
  ASSERT_NE(at, std::string::npos);
  recipe.replace(at, 10, "optimzer:");
  int line = 1 + int(std::count(recipe.begin(), recipe.begin() + long(at), '\n'));
  test::write_file(dir / "r.yaml", recipe);
  auto r = run(trainrun("check " + (dir / "r.yaml")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, (dir / "r.yaml") + ":" + std::to_string(line) + ":1: optimzer: unknown key (did you mean 'optimizer'?)\n");
}

TEST(Cli, BadInputBeforeTheRunExits2AndWritesNothing) {
  test::TempDir dir;
  std::string base = test::source("recipes/quickstart.yaml") + " output.dir=" + (dir / "run") + " ";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"data.dataset.root=" + (dir / "missing"),
       "data.dataset.root (command line 'data.dataset.root=" + (dir / "missing") + "'): " + (dir / "missing") + ": no such folder"},
      {"precision=fp16", "precision: fp16 needs a CUDA device (this run is on cpu); use bf16 or fp32 on CPU, or precision: auto"},
      {"world.device=cuda", "world.device: cuda was asked for but no CUDA device is available"},
      {"model.pretrained=" + (dir / "absent.safetensors"), "model.pretrained: " + (dir / "absent.safetensors") + ": no such file"},
      {"'freeze=[{params: \"*\", trainable: false}]'", "freeze: the rules leave no parameter trainable"},
      // found only by passing an example through the pipeline, still before the run starts
      {"'data.train_transforms=[to_tensor, {normalize: {mean: [0.5, 0.5], std: [1, 1]}}]' data.max_train_samples=1 "
       "world.nproc_per_node=1",
       "data.train_transforms: cannot transform an example: normalize: 2 means for an image with 1 channels"},
  };
  for (auto& c : cases) {
    auto r = run(trainrun(base + c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err, c.expect + "\n") << c.args;
    EXPECT_FALSE(std::filesystem::exists(dir / "run")) << c.args;
  }
}

TEST(Cli, VersionHelpAndUnknownCommands) {
  auto r = run(trainrun("--version"));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("trainrun 0."), std::string::npos);
  r = run(trainrun("--help"));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("check"), std::string::npos);
  r = run(trainrun("check"));
  EXPECT_EQ(r.code, 2);
  r = run(trainrun("nosuch.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "nosuch.yaml: no such recipe file\n");
}

// The binary allocates with tcmalloc where the build found it (CMakeLists.txt): in trainrun's
// process every library's malloc, libtorch's and libc's own included, binds to it. The dynamic
// linker's trace goes to one file per process (LD_DEBUG_OUTPUT): a program some library starts
// (it inherits LD_DEBUG, has no tcmalloc and binds malloc to libc) is another process and is
// listed, not counted. A failure prints every malloc binding of trainrun's process that is not
// tcmalloc's, whole.
TEST(Cli, BinaryAllocatesWithTcmalloc) {
#ifndef TRAINRUN_TCMALLOC_LINKED
  GTEST_SKIP() << "built without tcmalloc (libtcmalloc-minimal4 not installed or TRAINRUN_TCMALLOC=OFF)";
#endif
  test::TempDir dir;
  auto r = run("LD_DEBUG=bindings LD_DEBUG_OUTPUT=" + (dir / "ld") + " " + trainrun("--version"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string main_object = "binding file " + std::string(TRAINRUN_BINARY) + " [0] to ";
  std::vector<std::string> ours, others;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    std::string trace = test::read_file(entry.path().string());
    (trace.find(main_object) != std::string::npos ? ours : others).push_back(std::move(trace));
  }
  ASSERT_EQ(ours.size(), 1u) << "trace files: " << ours.size() + others.size();
  for (const auto& trace : others) {  // said in the log, not a failure: not trainrun's process
    std::istringstream in(trace);
    std::string first;
    std::getline(in, first);
    std::cout << "another process traced (started by a library): " << first << "\n";
  }
  const std::regex malloc_binding(R"(binding file (\S+) \[(\d+)\] to (\S+) \[\d+\]: normal symbol `malloc')");
  std::istringstream in(ours.front());
  std::string line, not_tcmalloc;
  bool libtorch = false, libc = false;
  int bindings = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, malloc_binding)) continue;
    ++bindings;
    const bool to_tcmalloc = m[3].str().find("/libtcmalloc_minimal.so.4") != std::string::npos;
    if (!to_tcmalloc) not_tcmalloc += line + "\n";
    // libtorch_cpu.so.1 on Debian 12, libtorch_cpu.so.2.6 on Debian 13.
    if (to_tcmalloc && std::regex_search(m[1].str(), std::regex(R"(/libtorch_cpu\.so)"))) libtorch = true;
    if (to_tcmalloc && std::regex_search(m[1].str(), std::regex(R"(/libc\.so\.6$)"))) libc = true;
  }
  EXPECT_GT(bindings, 10);
  EXPECT_TRUE(libtorch) << "libtorch_cpu's malloc is not bound to tcmalloc";
  EXPECT_TRUE(libc) << "libc's own malloc is not bound to tcmalloc";
  EXPECT_EQ(not_tcmalloc, "") << "malloc bound elsewhere than tcmalloc in trainrun's process";
}

// world.nproc_per_node: auto is one process here (no CUDA) whose threads use every usable CPU;
// a CPU set (taskset, a cgroup cpuset, srun's binding) counts, not the machine's CPUs.
TEST(Cli, AutoWorldLayoutUsesTheUsableCpus) {
  const std::string recipe = test::source("recipes/quickstart.yaml") + " world.nproc_per_node=auto";
  const int cpus = std::stoi(run("nproc").out);
  auto r = run(trainrun("check " + recipe));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world: 1 node x 1 process, no process group (one process), " + std::to_string(cpus) + " threads per process"),
            std::string::npos) << r.out;
  r = run("taskset -c 0 " + trainrun("check " + recipe));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world: 1 node x 1 process, no process group (one process), 1 threads per process"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#   world.threads_per_proc: 1 (1 usable CPUs / 1 process on this node)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  threads_per_proc: 1\n"), std::string::npos) << r.out;
  EXPECT_EQ(run(trainrun("check " + recipe + "x")).code, 2);  // "autox": not a number, not auto
}

TEST(Cli, CheckPrintsResolvedRecipeCountsAndLayout) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto r = run(trainrun("check " + test::source("recipes/quickstart.yaml") + " world.threads_per_proc=1"));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* needle : {"name: quickstart", "mean: [0.1307]", "num_classes: 10",
                             "model: basicnet, 1,199,882 parameters, 1,199,882 trainable",
                             "60,000 train / 10,000 test examples", "Ankle boot: 6000",
                             "steps per epoch: 469 (batch 64 x 2 processes)", "1 node x 2 processes, backend gloo, 1 threads per process"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
}

// What `check` prints and a run writes (recipe.resolved.yaml) is what runs: no `auto` left in it,
// each resolved value named with its reason, no YAML anchors (eval_batch_size: null once became
// `batch_size: &1 64` / `eval_batch_size: *1`).
TEST(Cli, ResolvedRecipeHoldsNoAutoAndNoAnchors) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto r = run(trainrun("check " + test::source("recipes/quickstart.yaml") +
                        " precision=auto memory_format=auto world.device=auto world.backend=auto data.eval_batch_size=null"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string recipe = r.out.substr(0, r.out.find("\nmodel: "));
  for (const char* needle : {"\nmemory_format: contiguous\n", "  device: cpu\n", "  backend: gloo\n",
                             "  batch_size: 64\n", "  eval_batch_size: 64\n", "#   memory_format: contiguous (basicnet does not gain from NHWC)\n",
                             "#   world.device: cpu (no CUDA device)\n", "#   world.backend: gloo (gloo on a CPU)\n",
                             "#   data.eval_batch_size: 64 (null: batch_size)\n"})
    EXPECT_NE(recipe.find(needle), std::string::npos) << needle << "\n" << recipe;
  EXPECT_TRUE(std::regex_search(recipe, std::regex("\nprecision: (fp32|bf16)\n"))) << recipe;
  EXPECT_TRUE(std::regex_search(recipe, std::regex("#   precision: (fp32|bf16) \\(this CPU has"))) << recipe;
  // output.resume: auto is a choice the run makes with its folder, not a value of this machine.
  for (const char* key : {"precision", "memory_format", "device", "backend", "nproc_per_node", "threads_per_proc"})
    EXPECT_EQ(recipe.find(std::string(key) + ": auto"), std::string::npos) << key << "\n" << recipe;
  EXPECT_FALSE(std::regex_search(recipe, std::regex(": [&*][0-9]"))) << recipe;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("precision (fp32|bf16) \\(auto: this CPU has[^)]*\\), memory format contiguous "
                                                  "\\(auto: basicnet does not gain from NHWC\\)\n")))
      << r.out;
}

}  // namespace
}  // namespace trainrun
