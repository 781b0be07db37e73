// The recipe's `world:` section: processes, threads and device. Declared here, beside the
// launcher and the Accelerator that read it, so that they take it whole rather than a copy of
// its keys, and a hand-written loop's Accelerator gets the declared defaults.
#pragma once

#include "registry/section_spec.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace trainrun {

struct WorldConfig {
  int64_t nproc_per_node, nnodes, node_rank;
  std::string master_addr;
  int64_t master_port;
  std::string init_method;  // env | file:///path
  std::string backend;      // gloo | nccl | auto
  double timeout_s;
  int64_t max_restarts;
  std::string device;       // as written: cpu | cuda | auto (the job resolves it)
  int64_t threads_per_proc;

  int64_t world_size() const { return nproc_per_node * nnodes; }
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(int64_t(timeout_s * 1000)); }
  // Every key at its declared default.
  static WorldConfig defaults();
};

// The section's keys, declared once: its schema (`describe recipe/world`) and its reader.
const SectionSpec<WorldConfig>& world_section();

}  // namespace trainrun
