// torchrun's job for trainrun: start the local worker processes (this same binary), give each
// its RANK / LOCAL_RANK / WORLD_SIZE / ... environment, forward signals, and report the first
// rank that fails. With world.max_restarts the whole world is relaunched.
#pragma once

#include <string>
#include <vector>

namespace trainrun {

struct LaunchOptions {
  int64_t nproc_per_node = 1;
  int64_t nnodes = 1;
  int64_t node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::string init_method = "env";
  int64_t max_restarts = 0;
  int64_t timeout_s = 60;
};

// Checks that the rendezvous port can be served here (node 0); port 0 picks a free one.
// Throws RecipeError naming world.master_port when it is taken.
int64_t reserve_master_port(const LaunchOptions& o);

// Runs the world; returns the launcher's exit code (0, 1 after a failed rank, 130 on SIGINT/SIGTERM).
int launch(const std::vector<std::string>& argv, const LaunchOptions& options);

}  // namespace trainrun
