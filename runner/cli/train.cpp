// `trainrun RECIPE.yaml [key.path=value ...]`: train and evaluate in this process, or launch the
// world of worker processes the recipe asks for (docs/reference/cli.md).
#include "runner/cli/commands.h"
#include "runner/distributed/launcher.h"
#include "runner/export/hub_push.h"
#include "runner/io/checkpoint.h"
#include "runner/logging/logging.h"
#include "runner/recipe/preflight.h"
#include "runner/recipe/resume_plan.h"
#include "runner/train/callbacks/callbacks.h"
#include "runner/train/trainer.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace trainrun::cli {
namespace {

// Workers are forked from the launcher (launcher.h) where LibTorch has no CUDA, so no CUDA
// context can exist; TRAINRUN_WORKER_START=exec asks for fresh processes anyway.
bool fork_workers() {
  const char* start = std::getenv("TRAINRUN_WORKER_START");
  if (start && std::string(start) == "exec") return false;
  return !at::hasCUDA();
}

// output.push_to_hub: rank 0 trains with the pusher and pushes the final model after the run.
void train_and_push(Job& job, const WorldInfo& world) {
  std::shared_ptr<HubPusher> pusher;
  if (job.config.output.push_to_hub && world.rank == 0)
    pusher = std::make_shared<HubPusher>(job, *job.config.output.push_to_hub);
  train(job, world, pusher ? std::vector<std::shared_ptr<Callback>>{pusher} : std::vector<std::shared_ptr<Callback>>{});
  if (pusher) pusher->push_final(job.config.output.dir);
}

// The repository made (and the token tried) before anything trains: exit 2 when it cannot be.
void create_hub_repository(Job& job) {
  if (!job.config.output.push_to_hub) return;
  try {
    HubPusher(job, *job.config.output.push_to_hub).create_repository();
  } catch (const HubUploadError& e) {
    throw RecipeError(std::string("output.push_to_hub: ") + e.what());
  }
}

}  // namespace

std::optional<WorldInfo> launched_world(TrainState& state) {
  auto world = WorldInfo::from_env();  // set when a launcher (ours, torchrun, SLURM, mpirun) started us
  if (world) {
    state.rank = world->rank;
    setup_console_logging(state.rank);
    if (world->distributed()) name_worker_process(world->rank);
  }
  // Until the Trainer sets job.threads, one thread: a launcher forks its workers (launcher.h),
  // which needs it to hold no OpenMP pool.
  if (!world) at::set_num_threads(1);
  return world;
}

int cmd_train(const std::vector<std::string>& args, const std::vector<std::string>& argv, TrainState& state) {
  std::optional<WorldInfo> world = launched_world(state);
  Job job = load_job(args);
  check_resume_option(job.config.output);
  const int64_t world_size = world ? world->world_size : job.config.world.world_size();
  fit_global_batch(job, world_size);
  preflight(job, world_size);  // every recipe mistake is exit 2 before anything is started or written
  if (world ? world->rank == 0 : job.config.world.node_rank == 0) {
    check_output_folder(job.config.output.dir);
    const ResumePlan plan = plan_resume(job, world_size);
    if (plan.action == ResumePlan::Action::Refuse) throw RecipeError(plan.line);
    // A finished run starts nothing; a world of several nodes, or one a launcher started, learns
    // it together in the trainer (TrainLoop::resume), so that no rank waits for another.
    if (plan.action == ResumePlan::Action::Finished && !world && job.config.world.nnodes == 1) {
      spdlog::info("{}", plan.line);
      return kExitOk;
    }
    if (plan.action == ResumePlan::Action::Resume) check_resume_fits(job);
    create_hub_repository(job);
  }
  return run_in_world(job, world, world_size, argv, state, train_and_push);
}

int run_in_world(Job& job, std::optional<WorldInfo> world, int64_t world_size, const std::vector<std::string>& argv,
                 TrainState& state, const std::function<void(Job&, const WorldInfo&)>& body) {
  if (world || world_size == 1) {
    state.started = true;
    body(job, world.value_or(WorldInfo{}));
    return kExitOk;
  }
  LaunchOptions o{job.config.world, fork_workers()};
  o.world.master_port = reserve_master_port(o);
  state.started = true;
  std::optional<int> code = launch(argv, o);
  if (code) return *code;
  // A worker forked from the launcher above: the job is built already.
  world = WorldInfo::from_env();
  state.rank = world->rank;
  setup_console_logging(state.rank);
  name_worker_process(world->rank);
  body(job, *world);
  return kExitOk;
}

}  // namespace trainrun::cli
