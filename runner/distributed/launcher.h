// torchrun's job for trainrun: start the local worker processes (this same binary), give each
// its RANK / LOCAL_RANK / WORLD_SIZE / ... environment, forward signals, and report the first
// rank that fails. With world.max_restarts the whole world is relaunched.
//
// Workers start one of two ways. exec: a fresh `trainrun` (/proc/self/exe) with the same
// arguments, which loads LibTorch (~0.4 s here) and builds the job again. fork: a copy of the
// launcher that returns from launch() and trains the job the launcher already built; a worker is
// running in well under a second. fork is only safe where the launcher runs no other thread and
// no CUDA context exists (CUDA cannot be used in a forked child), so the caller asks for it and
// launch() still execs when the launcher has started a thread.
#pragma once

#include "runner/distributed/world_config.h"

#include <optional>
#include <string>
#include <vector>

namespace trainrun {

struct LaunchOptions {
  WorldConfig world;          // the recipe's world: section (master_port: as reserve_master_port found it)
  bool fork_workers = false;  // fork (see above) rather than exec
};

// Checks that the rendezvous port can be served here (node 0); port 0 picks a free one.
// Throws RecipeError naming world.master_port when it is taken.
int64_t reserve_master_port(const LaunchOptions& o);

// Runs the world; returns the launcher's exit code (0, 1 after a failed rank, 130 on SIGINT/SIGTERM).
// In a worker started by fork it returns nullopt, with the worker's RANK, WORLD_SIZE, ... set in
// its environment and the launcher's signal handlers undone: the caller goes on as that worker.
std::optional<int> launch(const std::vector<std::string>& argv, const LaunchOptions& options);

// Names this process `trainrun-rank<R>` (its comm: what ps, top and /proc/PID/comm show) for
// whichever launcher started it.
void name_worker_process(int64_t rank);


}  // namespace trainrun
