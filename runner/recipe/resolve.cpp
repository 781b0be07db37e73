// The recipe's `auto` values resolved for this machine and launch (resolve.h).
#include "runner/recipe/resolve.h"

#include "runner/distributed/world_info.h"
#include "runner/recipe/onednn_check.h"

#include <torch/torch.h>

#include <sched.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

namespace trainrun {

namespace {

// Whether this CPU computes bf16 natively (x86 AVX512-BF16 or AMX-BF16, Arm BF16), where bf16
// autocast runs the convolutions and matmuls faster than fp32; elsewhere it is emulated, slower.
std::string cpu_bf16_feature() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    for (const char* f : {"amx_bf16", "avx512_bf16", "bf16"})
      if (flags.count(f)) return f;
    return "";
  }
  return "";
}

}  // namespace

// The CPUs this process may run on (its affinity mask: taskset, cgroups' cpusets, srun's binding).
int64_t usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
}

std::string resolve_device(const std::string& wanted) {
  bool cuda = torch::cuda::is_available();
  if (wanted == "cuda" && !cuda) throw RecipeError("world.device: cuda was asked for but no CUDA device is available");
  return wanted == "auto" ? (cuda ? "cuda" : "cpu") : wanted;
}

// precision: auto is what Accelerate's examples ask for on a GPU (fp16 with loss scaling) and
// the fastest close-enough choice on a CPU: bf16 autocast where the CPU has bf16 units.
void resolve_precision(Job& job) {
  const std::string& wanted = job.config.precision;
  if (wanted == "fp16" && job.device != "cuda")
    throw RecipeError("precision: fp16 needs a CUDA device (this run is on " + job.device +
                      "); use bf16 or fp32 on CPU, or precision: auto");
  job.precision = wanted;
  if (wanted != "auto") return;
  if (job.device == "cuda") {
    job.precision = "fp16";
    job.precision_reason = "auto: fp16 with loss scaling on CUDA";
    return;
  }
  std::string feature = cpu_bf16_feature();
  job.precision = feature.empty() ? "fp32" : "bf16";
  job.precision_reason = feature.empty() ? "auto: this CPU has no bf16 units" : "auto: this CPU has " + feature;
}

// memory_format: auto is channels_last for a model that prefers it where NHWC convolutions are
// fast (oneDNN on a CPU, CUDA); the conv weights are made NHWC here, as model.to(memory_format=
// torch.channels_last) does, and the trainer feeds NHWC inputs.
// Not on a CPU where oneDNN's NHWC convolutions are wrong (onednn_check.h): `auto` stays
// contiguous there and says why; an explicit channels_last is refused before anything starts.
void resolve_memory_format(Job& job) {
  const std::string& wanted = job.config.memory_format;
  if (wanted == "contiguous") return;
  const auto fault = job.device == "cpu" && at::hasMKLDNN() ? onednn_channels_last_fault() : std::nullopt;
  if (wanted == "auto") {
    if (!job.model->prefers_channels_last()) {
      job.memory_format_reason = "auto: " + job.config.model + " does not gain from NHWC";
      return;
    }
    if (job.device != "cuda" && !at::hasMKLDNN()) {
      job.memory_format_reason = "auto: no oneDNN or CUDA convolutions";
      return;
    }
    if (fault) {
      job.memory_format_reason = "auto: " + *fault;
      return;
    }
    job.memory_format_reason = job.device == "cuda" ? "auto: convolutions on CUDA" : "auto: oneDNN convolutions";
  } else if (fault) {
    throw RecipeError("memory_format: channels_last: " + *fault + "; use contiguous (or auto)");
  }
  job.channels_last = true;
  torch::NoGradGuard no_grad;
  for (auto& p : job.model->parameters())
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
}

// The `auto` values the typed views need resolved: nproc_per_node, threads_per_proc and
// eval_batch_size. nproc_per_node: auto is one process per GPU on CUDA (torchrun's auto), and one
// process on a CPU, whose threads (threads_per_proc: auto) then use every usable CPU: measured
// faster than torchrun's one process per CPU, which adds a gradient all-reduce to every step
// (bench/README.md, "World layout").
std::vector<ResolvedValue> resolve_auto_values(YAML::Node root) {
  std::vector<ResolvedValue> out;
  YAML::Node world = root["world"];
  if (world["nproc_per_node"].Scalar() == "auto") {
    const bool cuda = world["device"].Scalar() != "cpu" && torch::cuda::is_available();
    const int64_t n = cuda ? std::max<int64_t>(1, torch::cuda::device_count()) : int64_t(1);
    world["nproc_per_node"] = n;
    out.push_back({"world.nproc_per_node", cuda ? "one process per CUDA device" : "one process on a CPU, its threads on every CPU"});
  }
  if (world["threads_per_proc"].Scalar() == "auto") {
    // The processes on this node as the launcher that started us says (torchrun, srun, mpirun),
    // else the recipe's layout.
    auto launched = WorldInfo::from_env();
    int64_t procs = std::max<int64_t>(1, launched ? launched->local_world_size : world["nproc_per_node"].as<int64_t>());
    world["threads_per_proc"] = std::max<int64_t>(1, usable_cpus() / procs);
    out.push_back({"world.threads_per_proc", std::to_string(usable_cpus()) + " usable CPUs / " + std::to_string(procs) +
                                                 " process" + (procs > 1 ? "es" : "") + " on this node"});
  }
  if (root["data"]["eval_batch_size"].IsNull()) {
    root["data"]["eval_batch_size"] = root["data"]["batch_size"].as<int64_t>();
    out.push_back({"data.eval_batch_size", "null: batch_size"});
  }
  return out;
}

std::vector<ResolvedValue> write_resolved_choices(Job& job) {
  std::vector<ResolvedValue> out;
  YAML::Node root = job.recipe.root;
  const RunConfig& c = job.config;
  root["precision"] = job.precision;
  if (c.precision == "auto") out.push_back({"precision", job.precision_reason.substr(job.precision_reason.find(": ") + 2)});
  const std::string format = job.channels_last ? "channels_last" : "contiguous";
  root["memory_format"] = format;
  if (c.memory_format == "auto")
    out.push_back({"memory_format", job.memory_format_reason.substr(job.memory_format_reason.find(": ") + 2)});
  root["world"]["device"] = job.device;
  if (c.world.device == "auto")
    out.push_back({"world.device", job.device == "cuda" ? "a CUDA device is available" : "no CUDA device"});
  if (c.world.backend == "auto") {
    root["world"]["backend"] = job.device == "cuda" ? "nccl" : "gloo";
    out.push_back({"world.backend", job.device == "cuda" ? "nccl on CUDA" : "gloo on a CPU"});
  }
  return out;
}

std::string resolved_recipe_text(const Job& job) {
  std::string text = job.recipe.dump();
  if (job.resolved.empty()) return text;
  text += "# `auto` values resolved for this machine and launch:\n";
  for (const auto& v : job.resolved) text += "#   " + v.path + ": " + job.recipe.node(v.path).Scalar() + " (" + v.reason + ")\n";
  return text;
}

}  // namespace trainrun
