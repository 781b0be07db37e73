// Where this process sits in the world, as the launcher that started it says: ours or torchrun
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), SLURM's srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, first host of SLURM_NODELIST) or Open MPI's mpirun
// (OMPI_COMM_WORLD_*).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainrun {

struct WorldInfo {
  int64_t rank = 0, local_rank = 0, world_size = 1, local_world_size = 1;
  int64_t node_rank = 0, nnodes = 1;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::string init_method = "env";  // env (TCPStore at master) | file:///path (FileStore)
  std::string launcher = "none";    // none | trainrun | torchrun | slurm | mpi

  // From the environment of a launcher; empty when none is present. A variable that does not
  // make sense (RANK=x, a rank outside the world) is a RecipeError naming it.
  static std::optional<WorldInfo> from_env();
  bool distributed() const { return world_size > 1; }
};

}  // namespace trainrun
