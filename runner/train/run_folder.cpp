#include "runner/train/run_folder.h"

#include "runner/distributed/accelerator.h"
#include "runner/logging/logging.h"
#include "runner/recipe/job.h"
#include "runner/recipe/resolve.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

namespace trainrun {

namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  try {
    write_file_atomic(path, text);
  } catch (const FileWriteError& e) {
    throw TrainingError(e.what());
  }
}

}  // namespace

// The run folder (rank 0 makes it): the resolved recipe, labels.json, train.log; the job's
// notes are logged once.
void prepare_run_folder(const Job& job, Accelerator& acc) {
  fs::path dir = job.config.output.dir;
  const bool main_process = acc.is_main_process();
  if (main_process) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw TrainingError(dir.string() + ": cannot create the run folder: " + ec.message());
    write_text(dir / "recipe.resolved.yaml", resolved_recipe_text(job));
    nlohmann::ordered_json labels;
    for (std::size_t i = 0; i < job.data.classes.size(); ++i) labels[std::to_string(i)] = job.data.classes[i];
    write_text(dir / "labels.json", labels.dump(2) + "\n");
  }
  acc.wait_for_everyone();  // the run folder exists before any rank logs into it
  // Other nodes see rank 0's folder only on a shared file system; without one they keep
  // their warnings on their console.
  if (main_process || fs::is_directory(dir)) add_log_file((dir / "train.log").string());
  if (main_process)
    for (auto& note : job.notes) spdlog::warn("{}", note);
}

// The Trainer's "***** Running training *****" banner.
void log_banner(const Job& job, const WorldInfo& world, const Accelerator& acc, const RunLength& length) {
  const int64_t batch = job.config.data.batch_size, accum = job.config.train.grad_accum_steps;
  spdlog::info("***** Running training *****");
  spdlog::info("  Num examples = {}", thousands(int64_t(job.data.train->size())));
  if (job.sample_weights.defined())  // only then, so a default run's log is as it was
    spdlog::info("  Sampler = weighted ({} draws per epoch with replacement, each example weighted 1 / its class's count)",
                 thousands(int64_t(job.data.train->size())));
  spdlog::info("  Num Epochs = {}", job.config.train.epochs);
  spdlog::info("  Instantaneous batch size per device = {}", batch);
  spdlog::info("  Total train batch size (w. parallel, distributed & accumulation) = {}", batch * acc.world_size() * accum);
  spdlog::info("  Gradient Accumulation steps = {}", accum);
  spdlog::info("  Total optimization steps = {}", thousands(length.total_steps));
  spdlog::info("  Number of trainable parameters = {} (of {})", thousands(job.trainable_parameters()),
               thousands(job.total_parameters()));
  const char* started = world.launcher == "trainrun" ? std::getenv("TRAINRUN_WORKERS_STARTED") : nullptr;
  // One process on its own has no process group and no launcher: said in words, not as "none".
  const std::string group = acc.backend() == "none" ? "no process group" : acc.backend() + " backend";
  const std::string launched = world.launcher == "none" ? "started directly" : "launched by " + world.launcher;
  spdlog::info("  World = {} node{} x {} process{} ({}, {}{}), {} threads per process", world.nnodes,
               world.nnodes > 1 ? "s" : "", world.local_world_size, world.local_world_size > 1 ? "es" : "", group, launched,
               started && *started ? std::string(", ") + started : "", job.threads);
  if (!acc.rendezvous().empty()) spdlog::info("  Rendezvous = {}", acc.rendezvous());
  spdlog::info("  Device = {}, precision = {}{}{}", acc.device().str(), job.precision,
               job.precision_reason.empty() ? "" : " (" + job.precision_reason + ")",
               !job.channels_last && job.memory_format_reason.empty()
                   ? ""
                   : std::string(", memory format = ") + (job.channels_last ? "channels_last" : "contiguous") +
                         (job.memory_format_reason.empty() ? "" : " (" + job.memory_format_reason + ")"));
  if (job.config.data.synthetic)
    spdlog::info("  Synthetic input = every step trains on the first batch, held on {} (data.synthetic: the data path left out)",
                 acc.device().str());
  if (const auto& stages = job.config.train.checkpoint_stages; !stages.empty())
    spdlog::info("  Activation checkpointing = {} (each block's activations recomputed in backward)",
                 fmt::join(stages, ", "));
}

// The Trainer's lines on resuming from a checkpoint.
void log_resume(const std::string& from, int64_t epoch, int64_t step, int64_t skip) {
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (restart && std::string(restart) != "0" && *restart)
    spdlog::info("  Restart {} of the world: resuming from the newest checkpoint", restart);
  spdlog::info("  Resuming from {}", from);
  spdlog::info("  Continuing training from checkpoint, will skip to saved global_step");
  spdlog::info("  Continuing training from epoch {}", epoch);
  spdlog::info("  Continuing training from global step {}", step);
  spdlog::info("  Will skip the first {} batches in the first epoch", skip);
}

}  // namespace trainrun
