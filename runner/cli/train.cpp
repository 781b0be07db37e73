// `trainrun RECIPE.yaml [key.path=value ...]`: train and evaluate in this process, or launch the
// world of worker processes the recipe asks for (SPEC §1).
#include "runner/cli/commands.h"
#include "runner/distributed/launcher.h"
#include "runner/io/checkpoint.h"
#include "runner/logging/logging.h"
#include "runner/recipe/preflight.h"
#include "runner/train/trainer.h"

namespace trainrun::cli {
namespace {

LaunchOptions launch_options(const WorldConfig& w) {
  LaunchOptions o;
  o.nproc_per_node = w.nproc_per_node;
  o.nnodes = w.nnodes;
  o.node_rank = w.node_rank;
  o.master_addr = w.master_addr;
  o.master_port = w.master_port;
  o.init_method = w.init_method;
  o.max_restarts = w.max_restarts;
  o.timeout_s = int64_t(w.timeout_s);
  return o;
}

}  // namespace

int cmd_train(const std::vector<std::string>& args, const std::vector<std::string>& argv, TrainState& state) {
  auto world = WorldInfo::from_env();  // set when a launcher (ours, torchrun, SLURM, mpirun) started us
  if (world) {
    state.rank = world->rank;
    setup_console_logging(state.rank);
  }
  Job job = load_job(args);
  check_resume_option(job.config.output);
  const int64_t world_size = world ? world->world_size : job.config.world.world_size();
  preflight(job, world_size);  // every recipe mistake is exit 2 before anything is started or written
  if (world || world_size == 1) {
    state.started = true;
    train(job, world.value_or(WorldInfo{}));
    return 0;
  }
  LaunchOptions o = launch_options(job.config.world);
  o.master_port = reserve_master_port(o);
  state.started = true;
  return launch(argv, o);
}

}  // namespace trainrun::cli
