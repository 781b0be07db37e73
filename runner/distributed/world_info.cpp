// Reading the launchers' environment (world_info.h).
#include "runner/distributed/world_info.h"

#include "support/errors.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace trainrun {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::optional<std::string>(v) : std::nullopt;
}

// A launcher's number, e.g. RANK. A bad one is a bad input (exit 2, nothing started), named with
// its variable. `leading`: only the leading number counts (SLURM_TASKS_PER_NODE is "2(x3)").
int64_t env_int(const char* name, int64_t fallback, bool leading = false) {
  auto v = env(name);
  if (!v) return fallback;
  int64_t x = 0;
  const char *begin = v->data(), *end = begin + v->size();
  auto [ptr, ec] = std::from_chars(begin, end, x);
  if (ec != std::errc() || x < 0 || (!leading && ptr != end))
    throw RecipeError(std::string(name) + "=" + *v + ": expected a whole number >= 0 (set by the launcher that "
                      "started trainrun, or by hand)");
  if (x > std::numeric_limits<int32_t>::max())  // ranks and sizes c10d keeps in an int
    throw RecipeError(std::string(name) + "=" + *v + ": too large (at most " +
                      std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  return x;
}

// First host of a SLURM node list: "node[003-005,7],gpu1" -> "node003".
std::string first_slurm_host(const std::string& list) {
  auto bracket = list.find('['), comma = list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket))
    return list.substr(0, comma);
  std::string prefix = list.substr(0, bracket);
  std::string first = list.substr(bracket + 1, list.find_first_of("-,]", bracket) - bracket - 1);
  return prefix + first;
}

// The variables a launcher sets, in this order: rank, world size, local rank, local world size,
// node rank (they name the culprit in messages).
using VariableNames = std::array<const char*, 5>;
constexpr VariableNames kTorchrun = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"};
constexpr VariableNames kSlurm = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
                                  "SLURM_NODEID"};
// Open MPI's node index follows from the rank (mpi_world), so messages name the rank for it.
constexpr VariableNames kMpi = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK"};

// The rank, world size and local rank every launcher gives, by its names.
WorldInfo ranks_of(const char* launcher, const VariableNames& names) {
  WorldInfo w;
  w.launcher = launcher;
  w.rank = env_int(names[0], 0);
  w.world_size = env_int(names[1], 1);
  w.local_rank = env_int(names[2], 0);
  return w;
}

// torchrun's (and our launcher's, which says so in TRAINRUN_LAUNCHER).
WorldInfo torchrun_world() {
  WorldInfo w = ranks_of(env("TRAINRUN_LAUNCHER").value_or("torchrun").c_str(), kTorchrun);
  w.local_world_size = env_int(kTorchrun[3], 1);
  w.node_rank = env_int(kTorchrun[4], w.rank / std::max<int64_t>(1, w.local_world_size));
  return w;
}

// srun's tasks (a job step).
WorldInfo slurm_world() {
  WorldInfo w = ranks_of("slurm", kSlurm);
  w.local_world_size = env_int(kSlurm[3], env_int("SLURM_TASKS_PER_NODE", 1, true));
  w.node_rank = env_int(kSlurm[4], 0);
  if (auto nodes = env("SLURM_NODELIST")) w.master_addr = first_slurm_host(*nodes);
  return w;
}

// mpirun's processes.
WorldInfo mpi_world() {
  WorldInfo w = ranks_of("mpi", kMpi);
  w.local_world_size = env_int(kMpi[3], 1);
  // OMPI_COMM_WORLD_NODE_RANK is not the node's index but the process's rank among all jobs'
  // processes on its node (1 for the second of `mpirun -np 2` on one machine). Open MPI's
  // default by-slot mapping fills node after node, so the index follows from the ranks.
  w.node_rank = w.rank / std::max<int64_t>(1, w.local_world_size);
  return w;
}

// The rendezvous every launcher may set: MASTER_ADDR, MASTER_PORT, our init method, NNODES.
void read_rendezvous(WorldInfo& w) {
  if (auto a = env("MASTER_ADDR")) w.master_addr = *a;
  w.master_port = env_int("MASTER_PORT", w.master_port);
  if (auto m = env("TRAINRUN_INIT_METHOD")) w.init_method = *m;
  w.nnodes = env_int("NNODES", (w.world_size + w.local_world_size - 1) / std::max<int64_t>(1, w.local_world_size));
}

RecipeError outside(const std::string& what, int64_t index, const std::string& count, const char* index_name,
                    const char* count_name) {
  return RecipeError(what + " " + std::to_string(index) + " is outside " + count + " (check " + index_name + " / " +
                     count_name + ")");
}

void check_launcher_world(const WorldInfo& w, const VariableNames& names) {
  if (w.master_port > 65535)
    throw RecipeError("MASTER_PORT=" + std::to_string(w.master_port) + ": not a port number (0 to 65535)");
  if (w.rank >= w.world_size)
    throw outside("rank", w.rank, "a world of " + std::to_string(w.world_size), names[0], names[1]);
  if (w.nnodes < 1) throw RecipeError("NNODES=0: expected at least 1 node");
  // SLURM's tasks per node are uneven in some allocations ("4,1,1"), so its first node's count
  // bounds neither the local rank nor the node id; torchrun's and Open MPI's are exact.
  if (w.launcher == "slurm") return;
  if (w.local_world_size < 1) throw RecipeError(std::string(names[3]) + "=0: expected at least 1 process on this node");
  if (w.local_rank >= w.local_world_size)
    throw outside("local rank", w.local_rank, "this node's " + std::to_string(w.local_world_size) + " process(es)",
                  names[2], names[3]);
  if (w.node_rank >= w.nnodes)
    throw outside("node", w.node_rank, "the world's " + std::to_string(w.nnodes) + " node(s)", names[4], "NNODES");
}

}  // namespace

std::optional<WorldInfo> WorldInfo::from_env() {
  WorldInfo w;
  const VariableNames* names = nullptr;
  if (env("RANK") && env("WORLD_SIZE")) {
    w = torchrun_world();
    names = &kTorchrun;
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS") && env("SLURM_STEP_ID")) {
    // An sbatch script's own shell carries SLURM_PROCID=0 and the job's SLURM_NTASKS too, but is
    // no task (SLURM_STEP_ID is unset): there trainrun launches its own world.
    w = slurm_world();
    names = &kSlurm;
  } else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    w = mpi_world();
    names = &kMpi;
  } else {
    return std::nullopt;
  }
  read_rendezvous(w);
  check_launcher_world(w, *names);
  return w;
}

}  // namespace trainrun
