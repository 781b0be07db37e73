// `trainrun sweep RECIPE.yaml key=a,b,c key2=x,y [overrides] [--grid | --random N --seed S]
// [--parallel P]`: one run per combination (runner/recipe/sweep_plan.h) in
// OUTPUT_DIR/sweep/NNN-key=value,.../, each a whole trainrun run started as a child
// (runner/cli/sub_runs.h), one after another or P at a time; then sweep_report.csv and .md sorted
// by output.best_metric, and sweep_plot.png (the metric against each swept key). A sweep started
// again skips the runs it recorded as finished (sweep/sweep_state.json, with their command lines)
// and resumes the others as output.resume says.
#include "runner/cli/commands.h"

#include "runner/cli/sub_runs.h"
#include "runner/cli/sweep_report.h"
#include "runner/recipe/resolve.h"
#include "runner/recipe/sweep_plan.h"
#include "support/durable_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct SweepSetup {
  std::string recipe;
  SweepPlan plan;
  std::vector<SweepRun> runs;
  fs::path dir;                      // OUTPUT_DIR/sweep
  RunConfig config;                  // the recipe with the fixed overrides
  std::vector<std::string> threads;  // world.threads_per_proc=N for parallel runs, or nothing
};

std::vector<std::string> child_args(const SweepSetup& s, const SweepRun& run) {
  std::vector<std::string> args = {s.recipe};
  for (const std::string& o : s.plan.fixed)
    if (o.rfind("output.dir=", 0) != 0) args.push_back(o);
  for (const std::string& o : run.overrides()) args.push_back(o);
  args.insert(args.end(), s.threads.begin(), s.threads.end());
  args.push_back("output.dir=" + (s.dir / run.folder).string());
  return args;
}

// P runs at a time fit the machine: P x processes x threads within its CPUs; threads_per_proc:
// auto is given each run's share.
std::vector<std::string> parallel_threads(const Recipe& base, const RunConfig& c, int64_t parallel) {
  if (parallel == 1) return {};
  const WorldConfig& w = c.world;
  if (w.nnodes > 1) throw RecipeError("sweep: --parallel " + std::to_string(parallel) + ": runs of several nodes run one at a time");
  if (w.nproc_per_node > 1 && w.master_port != 0)
    throw RecipeError(fmt::format("sweep: --parallel {}: world.master_port {} would be every run's; use 0 (a free port each)",
                                  parallel, w.master_port));
  const int64_t cpus = usable_cpus(), procs = parallel * w.nproc_per_node;
  const bool auto_threads = base.root["world"]["threads_per_proc"].Scalar() == "auto";
  const int64_t threads = auto_threads ? std::max<int64_t>(1, cpus / procs) : w.threads_per_proc;
  if (procs * threads > cpus)
    throw RecipeError(fmt::format("sweep: --parallel {}: {} run(s) x {} process(es) x {} thread(s) = {} threads on {} usable CPUs; "
                                  "lower --parallel or world.threads_per_proc",
                                  parallel, parallel, w.nproc_per_node, threads, procs * threads, cpus));
  if (!auto_threads) return {};
  spdlog::info("sweep: {} runs at a time, world.threads_per_proc={} each ({} usable CPUs)", parallel, threads, cpus);
  return {"world.threads_per_proc=" + std::to_string(threads)};
}

SweepSetup plan_sweep(const std::vector<std::string>& args, const SweepCommand& c) {
  if (args.empty()) throw RecipeError("sweep: no recipe given (usage: trainrun sweep RECIPE.yaml key=a,b,c ...)");
  SweepSetup s;
  s.recipe = args[0];
  s.plan = parse_sweep(std::vector<std::string>(args.begin() + 1, args.end()));
  if (s.plan.swept.empty()) throw RecipeError("sweep: nothing to sweep; give a key with several values, e.g. optimizer.lr=1e-3,1e-2");
  std::vector<std::string> base_args = {s.recipe};
  base_args.insert(base_args.end(), s.plan.fixed.begin(), s.plan.fixed.end());
  const Recipe base = load_recipe_of(base_args);
  s.config = run_config_of(base);
  s.dir = fs::path(s.config.output.dir) / "sweep";
  s.runs = c.random ? random_runs(s.plan, c.count, c.seed) : grid_runs(s.plan);
  s.threads = parallel_threads(base, s.config, c.parallel);
  for (const SweepRun& run : s.runs) {  // every run's recipe is valid before any starts
    std::vector<std::string> a = child_args(s, run);
    try {
      run_config_of(load_recipe_of(a));
    } catch (const RecipeError& e) {
      throw RecipeError("sweep: run " + run.folder + ": " + e.what());
    }
  }
  return s;
}

json read_state(const fs::path& file) {
  std::ifstream in(file);
  json state = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return state.is_object() ? state : json{{"runs", json::object()}};
}

// The runs, P at a time; returns the first stop signal's exit code (130 / 138), else 0.
int run_all(const SweepSetup& s, int64_t parallel, json& state, std::map<std::string, int>& codes) {
  const fs::path state_file = s.dir / "sweep_state.json";
  SubRuns children;
  std::map<pid_t, const SweepRun*> running;
  std::size_t next = 0;
  auto finish_one = [&] {
    const SubRuns::Ended end = children.wait_one();
    const SweepRun& run = *running.at(end.pid);
    running.erase(end.pid);
    codes[run.folder] = end.code;
    spdlog::info("sweep: {} {}", run.folder, end.code == 0 ? "finished" : "ended with exit code " + std::to_string(end.code));
    state["runs"][run.folder] = {{"args", child_args(s, run)}, {"exit", end.code}};
    write_file_atomic(state_file, state.dump(2) + "\n");
  };
  while (next < s.runs.size() || !running.empty()) {
    if (next < s.runs.size() && int64_t(running.size()) < parallel && !children.stopping()) {
      const SweepRun& run = s.runs[next++];
      const json recorded = state["runs"].contains(run.folder) ? state["runs"][run.folder] : json();
      if (recorded.is_object() && recorded.value("exit", -1) == 0 && recorded["args"] == json(child_args(s, run))) {
        codes[run.folder] = 0;
        spdlog::info("sweep: run {} of {}: {}: finished in an earlier session; skipped", run.number + 1, s.runs.size(), run.folder);
        continue;
      }
      spdlog::info("sweep: run {} of {}: {}", run.number + 1, s.runs.size(), run.folder);
      const std::string log = parallel > 1 ? (s.dir / (run.folder + ".log")).string() : "";
      running[children.start(child_args(s, run), log)] = &run;
      continue;
    }
    if (running.empty()) break;  // stopping, nothing left running
    finish_one();
  }
  if (!children.stopping()) return 0;
  for (const auto& [folder, code] : codes)
    if (code == kExitPreempted) return kExitPreempted;
  return kExitInterrupted;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args, const SweepCommand& c) {
  if (c.parallel < 1) throw RecipeError("sweep: --parallel " + std::to_string(c.parallel) + ": at least 1");
  const SweepSetup s = plan_sweep(args, c);
  fs::create_directories(s.dir);
  json state = read_state(s.dir / "sweep_state.json");
  spdlog::info("sweep: {} run{} of {} in {}", s.runs.size(), s.runs.size() == 1 ? "" : "s", s.recipe, s.dir.string());
  std::map<std::string, int> codes;
  const int stopped = run_all(s, c.parallel, state, codes);
  write_sweep_report(s.dir, s.plan, s.runs, codes, s.config.output);
  if (stopped) return stopped;
  for (const auto& [folder, code] : codes)
    if (code != 0) return kExitFailed;
  return kExitOk;
}

}  // namespace trainrun::cli
