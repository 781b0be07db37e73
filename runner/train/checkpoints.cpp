#include "runner/train/checkpoints.h"

#include "components/callbacks/checkpoint_format.h"
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "runner/distributed/accelerator.h"
#include "runner/io/weights.h"
#include "runner/train/loss_scaler.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string rng_key(const char* kind, int64_t rank) { return std::string(kind) + "_rank_" + std::to_string(rank); }

// This rank's generator states from rng.pt, as map_rng_states says for this device.
void restore_rng(const std::string& file, const Accelerator& acc, uint64_t seed, int64_t global_step) {
  const int64_t rank = acc.rank();
  torch::serialize::InputArchive archive;
  archive.load_from(file);
  at::Tensor cpu, cuda;
  const bool saved_cpu = archive.try_read(rng_key("cpu", rank), cpu, /*is_buffer=*/true);
  const bool saved_cuda = archive.try_read(rng_key("cuda", rank), cuda, /*is_buffer=*/true);
  const RngMapping m = map_rng_states(saved_cpu, saved_cuda, acc.device().is_cuda(), seed, global_step);
  if (m.restore_cpu) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();  // a handle to the global one
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(cpu);
  }
  if (m.restore_cuda || m.cuda_seed) {
    at::Generator gen = at::globalContext().defaultGenerator(acc.device());
    std::lock_guard<std::mutex> lock(gen.mutex());
    if (m.restore_cuda) gen.set_state(cuda);
    else gen.set_current_seed(*m.cuda_seed);
  }
  if (!m.note.empty() && acc.is_main_process()) spdlog::info("{}: {}", file, m.note);
}

}  // namespace

Checkpoints::Checkpoints(CheckpointOptions options, const Accelerator& acc) : options_(std::move(options)), acc_(acc) {
  if (acc_.is_main_process()) remove_unfinished_checkpoints(options_.dir);
}

std::optional<std::string> resume_point(const CheckpointOptions& options, const Accelerator& acc) {
  if (options.resume == "never") return std::nullopt;
  if (options.resume != "auto") {
    check_resume_path(options.resume);
    return options.resume;
  }
  // Rank 0 picks; the others take the same step, so that a checkpoint rank 0 finished while
  // another rank listed the folder cannot split the world.
  double picked = -1;
  if (acc.is_main_process()) {
    if (auto newest = planned_resume_point(options)) picked = double(*checkpoint_step(fs::path(*newest).filename().string()));
  }
  picked = acc.reduce_sum(at::scalar_tensor(acc.is_main_process() ? picked : 0.0, at::kDouble)).item<double>();
  if (picked < 0) return std::nullopt;
  fs::path folder = fs::path(options.dir) / ("checkpoint-" + std::to_string(int64_t(picked)));
  if (!is_complete_checkpoint(folder))
    throw CheckpointError("rank " + std::to_string(acc.rank()) + ": " + folder.string() +
                          " (rank 0's newest checkpoint) is not here: resuming on several nodes needs output.dir "
                          "on a shared file system");
  return folder.string();
}

std::string Checkpoints::save(const TrainingParts& parts, TrainerState& state, const LoopSums& sums,
                              const std::optional<json>& metrics,
                              const std::map<std::string, std::string>& extra_files) {
  // Every rank's RNG and loop sums travel to rank 0 (no shared file system needed).
  std::vector<at::Tensor> rng;
  at::Tensor cpu = at::detail::getDefaultCPUGenerator().get_state();
  at::Tensor all_cpu = acc_.gather_for_metrics(cpu).cpu();
  at::Tensor all_cuda;
  if (acc_.device().is_cuda())
    all_cuda = acc_.gather_for_metrics(at::globalContext().defaultGenerator(acc_.device()).get_state()).cpu();
  at::Tensor own = at::tensor({sums.loss_since_log, double(sums.batches_since_log), sums.loss_total,
                               double(sums.batches_total)},
                              at::kDouble);
  at::Tensor all_sums = acc_.gather_for_metrics(own).cpu();
  if (!acc_.is_main_process()) return "";

  const int64_t world = acc_.world_size();
  state.world_size = world;
  state.ranks.clear();
  auto s = all_sums.accessor<double, 1>();
  for (int64_t r = 0; r < world; ++r)
    state.ranks.push_back({s[r * 4], int64_t(s[r * 4 + 1]), s[r * 4 + 2], int64_t(s[r * 4 + 3])});
  for (int64_t r = 0; r < world; ++r) {
    rng.push_back(all_cpu.chunk(world)[r].clone());
    if (all_cuda.defined()) rng.push_back(all_cuda.chunk(world)[r].clone());
  }

  std::string name = "checkpoint-" + std::to_string(state.global_step);
  const std::string& key = options_.best_metric;
  if (metrics && !key.empty() && metrics->contains(key)) {
    double v = (*metrics)[key].get<double>();
    bool better = !state.best_metric || (options_.greater_is_better ? v > *state.best_metric : v < *state.best_metric);
    if (better) {
      state.best_metric = v;
      state.best_model_checkpoint = (fs::path(options_.dir) / name).string();
    }
  }
  write_folder(name, parts, state, rng, extra_files);
  std::string best = fs::path(state.best_model_checkpoint).filename().string();
  if (!best.empty()) update_best_link(options_.dir, best);
  if (options_.keep_last) rotate_checkpoints(options_.dir, std::size_t(*options_.keep_last), best, kept_);
  return (fs::path(options_.dir) / name).string();
}

void Checkpoints::write_folder(const std::string& name, const TrainingParts& parts, const TrainerState& state,
                               const std::vector<at::Tensor>& rng,
                               const std::map<std::string, std::string>& extra_files) const {
  auto write_files = [&](const fs::path& tmp) {
    try {
      save_safetensors((tmp / kModelFile).string(), state_dict(parts.model));
    } catch (const WeightsError& e) {
      throw CheckpointError(e.what());
    }
    {
      // LibTorch's own archive of the optimizer (torch::save(optimizer, ...)): its state per
      // parameter in parameter order, and each group's options.
      torch::serialize::OutputArchive archive;
      parts.optimizer.save(archive);
      std::ostringstream bytes;
      archive.save_to(bytes);
      write_durable(tmp / kOptimizerFile, bytes.str());
    }
    write_durable(tmp / kSchedulerFile, parts.scheduler.state().dump(2) + "\n");
    json scaler{{"enabled", parts.scaler.enabled()},
                {"scale", parts.scaler.current_scale()},
                {"growth_tracker", parts.scaler.growth_tracker()}};
    write_durable(tmp / kScalerFile, scaler.dump(2) + "\n");
    {
      torch::serialize::OutputArchive archive;
      bool cuda = int64_t(rng.size()) > acc_.world_size();
      for (int64_t r = 0; r < acc_.world_size(); ++r) {
        archive.write(rng_key("cpu", r), rng[std::size_t(cuda ? 2 * r : r)], /*is_buffer=*/true);
        if (cuda) archive.write(rng_key("cuda", r), rng[std::size_t(2 * r + 1)], /*is_buffer=*/true);
      }
      std::ostringstream bytes;
      archive.save_to(bytes);
      write_durable(tmp / kRngFile, bytes.str());
    }
    for (const auto& [file, bytes] : extra_files) write_durable(tmp / file, bytes);
    // Inside the folder's atomic write, before trainer_state.json marks it complete.
    write_durable(tmp / kResumeFile, state.resume_json().dump(2) + "\n");
  };
  write_checkpoint_folder(options_.dir, name, write_files, state.to_json().dump(2) + "\n");
}

TrainerState load_checkpoint(const std::string& folder, const TrainingParts& parts, LoopSums& sums,
                             const Accelerator& acc, uint64_t seed) {
  fs::path f = folder;
  TrainerState state = read_trainer_state(folder);
  load_state_dict(parts.model, load_safetensors((f / kModelFile).string()), (f / kModelFile).string());
  try {
    torch::serialize::InputArchive archive;
    archive.load_from((f / kOptimizerFile).string(), acc.device());
    parts.optimizer.load(archive);
  } catch (const c10::Error& e) {
    std::string what = e.what();
    throw CheckpointError((f / kOptimizerFile).string() + ": does not fit this optimizer: " +
                          what.substr(0, what.find('\n')));
  }
  try {
    parts.scheduler.load_state(read_json(f / kSchedulerFile));
  } catch (const std::invalid_argument& e) {
    throw CheckpointError((f / kSchedulerFile).string() + ": " + e.what());
  } catch (const json::exception& e) {
    throw CheckpointError((f / kSchedulerFile).string() + ": " + e.what());
  }
  try {
    json scaler = read_json(f / kScalerFile);
    double scale = scaler.at("scale").get<double>();
    int64_t growth_tracker = scaler.at("growth_tracker").get<int64_t>();
    if (!(scale > 0) || !std::isfinite(scale) || growth_tracker < 0)
      throw CheckpointError((f / kScalerFile).string() + ": expected a finite scale > 0 and a growth_tracker >= 0, got " +
                            scaler.dump());
    // A run without loss scaling (fp32, bf16, or on the CPU) saved its unused initial scale: an
    // fp16 run resuming it starts from its own, as torch's GradScaler does from an empty state.
    if (scaler.value("enabled", true)) parts.scaler.load(scale, growth_tracker);
  } catch (const json::exception& e) {
    throw CheckpointError((f / kScalerFile).string() + ": " + e.what());
  }

  restore_rng((f / kRngFile).string(), acc, seed, state.global_step);
  if (state.world_size != acc.world_size() && acc.is_main_process())
    spdlog::warn("{} was saved by {} process(es), this run has {}: the samples and their augmentation go on as "
                 "they would have; dropout's and mixup's random numbers (each process's generator), the order of "
                 "the gradient sums and BatchNorm's per-process statistics differ (docs/guides/resume.md)",
                 folder, state.world_size, acc.world_size());
  const int64_t rank = acc.rank();
  sums = rank < int64_t(state.ranks.size()) ? state.ranks[std::size_t(rank)] : LoopSums{};
  return state;
}

RngMapping map_rng_states(bool saved_cpu, bool saved_cuda, bool on_cuda, uint64_t seed, int64_t global_step) {
  RngMapping m;
  m.restore_cpu = saved_cpu;
  if (!saved_cpu) return m;  // a rank the checkpoint's world did not have: its generators start from the seed
  m.restore_cuda = saved_cuda && on_cuda;
  if (saved_cuda && !on_cuda)
    m.note = "written on CUDA, resumed on the CPU: the CPU generator's state is restored, CUDA's is not used";
  if (!saved_cuda && on_cuda) {
    m.cuda_seed = seed + uint64_t(global_step);
    m.note = "written without CUDA, resumed on CUDA: the CPU generator's state is restored, the CUDA generator "
             "(dropout on the GPU) is seeded with seed + global step = " + std::to_string(*m.cuda_seed);
  }
  return m;
}

}  // namespace trainrun
