// The launchers' environment (runner/distributed/world_info.cpp, WorldInfo::from_env): the
// input is NUL-separated values for the variables torchrun, srun and mpirun set, in the order
// of kVariables (an empty value leaves the variable unset). A world that comes back must make
// sense: 0 <= rank < world_size, 0 <= local_rank < local_world_size and node_rank < nnodes (but
// under SLURM), a port number.
#include "fuzz/fuzz_util.h"
#include "runner/distributed/world_info.h"
#include "runner/recipe/recipe.h"

#include <cstdlib>
#include <string>

namespace {

const char* const kVariables[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "NNODES",
    "TRAINRUN_LAUNCHER", "TRAINRUN_INIT_METHOD", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_LOCALID",
    "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_NODELIST", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  for (const char* name : kVariables) {
    size_t end = std::min(input.find('\0', pos), input.size());
    std::string value = pos < input.size() ? input.substr(pos, end - pos) : "";
    pos = end + 1;
    if (value.empty()) ::unsetenv(name);
    else ::setenv(name, value.c_str(), 1);
  }
  fuzz::expect_only<RecipeError>([&] {
    auto w = WorldInfo::from_env();
    if (!w) return;
    const bool exact = w->launcher != "slurm";  // SLURM's per-node counts may be uneven (world_info.cpp)
    if (w->rank < 0 || w->rank >= w->world_size || w->local_rank < 0 || w->node_rank < 0 || w->nnodes < 1 ||
        (exact && (w->local_rank >= w->local_world_size || w->node_rank >= w->nnodes)) || w->master_port < 0 ||
        w->master_port > 65535) {
      std::fprintf(stderr, "finding: accepted rank %lld of %lld, local %lld of %lld, node %lld of %lld, port %lld\n",
                   (long long)w->rank, (long long)w->world_size, (long long)w->local_rank,
                   (long long)w->local_world_size, (long long)w->node_rank, (long long)w->nnodes,
                   (long long)w->master_port);
      std::abort();
    }
  });
  return 0;
}
