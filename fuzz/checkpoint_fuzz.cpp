// Resuming from a checkpoint (runner/train/checkpoints.cpp load_checkpoint, components/callbacks/trainer_state.cpp):
// a BasicNet + AdamW + onecycle + loss scaler is saved once with trainrun's own Checkpoints::save,
// then each input replaces its files: NUL-separated trainer_state.json, scheduler.json,
// scaler.json and model.safetensors (the rest of the input, which may hold NULs). A part left
// out keeps the saved file. The input's trainer_state.json holds trainrun's own state under
// "trainrun", as checkpoints did before trainrun_state.json (read by the same code, which the
// saved trainrun_state.json would otherwise shadow). optimizer.pt and rng.pt are LibTorch's own
// archives, not fuzzed here.
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "fuzz/fuzz_util.h"
#include "registry/registry.h"
#include "runner/distributed/accelerator.h"
#include "runner/train/checkpoints.h"
#include "support/safetensors.h"
#include "components/callbacks/trainer_state.h"
#include "runner/train/loss_scaler.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

namespace {

namespace fs = std::filesystem;
using namespace trainrun;

AcceleratorOptions cpu_options() {
  AcceleratorOptions o;
  o.world.backend = "gloo";
  o.device = "cpu";
  return o;
}

struct Parts {
  Accelerator acc{WorldInfo{}, cpu_options()};
  std::shared_ptr<Classifier> model = Registry<Classifier>::instance().get("basicnet").make(
      Config(YAML::Load("{num_classes: 10, in_channels: 1, dropout1: 0.25, dropout2: 0.5}")));
  torch::optim::AdamW optimizer{model->parameters(), torch::optim::AdamWOptions(1e-3)};
  std::shared_ptr<Scheduler> scheduler = Registry<Scheduler>::instance().get("onecycle").make(
      Config(YAML::Load("{max_lr: 0.003, total_steps: null, pct_start: 0.3, anneal_strategy: cos, div_factor: 25.0, "
                        "final_div_factor: 10000.0, three_phase: false, cycle_momentum: true, base_momentum: 0.85, "
                        "max_momentum: 0.95}"), "scheduler"),
      ScheduleContext{&optimizer, 100, 10});
  LossScaler scaler{false};
  TrainingParts parts{*model, optimizer, *scheduler, scaler};
  fs::path saved;  // the folder Checkpoints::save wrote
};

Parts& parts() {
  static Parts p = [] { return Parts(); }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Parts& p = parts();
  CheckpointOptions options;
  options.dir = (fuzz::scratch() / "saved").string();
  options.save_every = "epoch";
  options.keep_last = 3;
  options.resume = "auto";
  fs::create_directories(options.dir);
  Checkpoints checkpoints(options, p.acc);
  TrainerState state;
  state.global_step = 7;
  state.max_steps = 100;
  fuzz::harness_step("saving the checkpoint every input starts from",
                     [&] { p.saved = checkpoints.save(p.parts, state, LoopSums{}, std::nullopt); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Parts& p = parts();
  const fs::path folder = fuzz::scratch() / "checkpoint-7";
  fuzz::harness_step("copying the saved checkpoint", [&] {
    fs::remove_all(folder);
    fs::copy(p.saved, folder, fs::copy_options::recursive);
  });
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  for (const char* name : {"trainer_state.json", "scheduler.json", "scaler.json", "model.safetensors"}) {
    if (pos >= input.size()) break;
    bool last = std::string(name) == "model.safetensors";
    size_t end = last ? input.size() : std::min(input.find('\0', pos), input.size());
    if (end > pos) fuzz::write_file(folder / name, std::string_view(input).substr(pos, end - pos));
    pos = end + 1;
  }
  if (!input.empty() && input[0] != '\0')
    fuzz::harness_step("removing trainrun_state.json", [&] { fs::remove(folder / kResumeFile); });
  LoopSums sums;
  fuzz::expect_only<CheckpointError, WeightsError>([&] {
    TrainerState state = load_checkpoint(folder.string(), p.parts, sums, p.acc, /*seed=*/0);
    if (state.global_step < 0 || state.epoch_index < 0 || state.batches_in_epoch < 0 || state.world_size < 1 ||
        p.scheduler->steps_done() < 0) {
      std::fprintf(stderr, "finding: accepted global_step %lld, epoch_index %lld, batches_in_epoch %lld, world_size "
                   "%lld, scheduler step %lld\n", (long long)state.global_step, (long long)state.epoch_index,
                   (long long)state.batches_in_epoch, (long long)state.world_size,
                   (long long)p.scheduler->steps_done());
      std::abort();
    }
  });
  return 0;
}
