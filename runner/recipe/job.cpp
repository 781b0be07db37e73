#include "runner/recipe/job.h"
#include "runner/recipe/onednn_check.h"

#include "components/data/download.h"
#include "runner/distributed/accelerator.h"
#include "support/download.h"
#include "support/hf_hub.h"
#include "runner/io/weights.h"

#include <torch/torch.h>

#include <fmt/format.h>
#include <fnmatch.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace trainrun {

int64_t Job::total_parameters() const {
  int64_t n = 0;
  for (auto& p : model->parameters()) n += p.numel();
  return n;
}

int64_t Job::trainable_parameters() const {
  int64_t n = 0;
  for (auto& p : model->parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

NamedParameters Job::trainable() const {
  NamedParameters out;
  for (auto& p : model->named_parameters())
    if (p.value().requires_grad()) out.emplace_back(p.key(), p.value());
  return out;
}

namespace {

bool rule_matches(const FreezeRule& rule, const std::string& name) {
  return fnmatch(rule.params.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

std::vector<int64_t> apply_freeze_rules(torch::nn::Module& model, const std::vector<FreezeRule>& rules, int64_t epoch) {
  std::vector<int64_t> matched(rules.size(), 0);
  for (auto& p : model.named_parameters()) {
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (!rule_matches(rules[i], p.key())) continue;
      ++matched[i];  // a rule that matches nothing at any epoch is worth a warning
      if (rules[i].from_epoch <= epoch) p.value().set_requires_grad(rules[i].trainable);
    }
  }
  return matched;
}

bool freeze_changes_at(const Job& job, int64_t epoch) {
  if (epoch <= 0) return false;  // build_job applied epoch 0's rules
  for (const auto& rule : job.config.freeze)
    if (rule.from_epoch == epoch) return true;
  return false;
}

NamedParameters apply_freeze_schedule(Job& job, int64_t epoch) {
  std::set<const void*> before;
  for (auto& [_, p] : job.trainable()) before.insert(p.unsafeGetTensorImpl());
  apply_freeze_rules(*job.model, job.config.freeze, epoch);
  NamedParameters added;
  for (auto& [name, p] : job.trainable())
    if (!before.count(p.unsafeGetTensorImpl())) added.emplace_back(name, p);
  return added;
}

void add_param_groups(const Job& job, torch::optim::Optimizer& optimizer, const NamedParameters& params) {
  if (params.empty()) return;
  // The recipe's optimizer over just these parameters lays out their groups and options.
  auto fresh = build_optimizer(job, params);
  for (const auto& group : fresh->param_groups()) optimizer.add_param_group(group);
}

int64_t freeze_batchnorm_statistics(torch::nn::Module& model) {
  int64_t n = 0;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (m->name().rfind("torch::nn::BatchNorm", 0) != 0) continue;
    auto params = m->parameters();
    bool frozen = std::none_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.requires_grad(); });
    if (frozen) m->eval(), ++n;
  }
  return n;
}

namespace {

std::shared_ptr<const Dataset> limit(std::shared_ptr<const Dataset> d, const YAML::Node& n) {
  if (n.IsNull() || n.as<std::size_t>() >= d->size()) return d;
  return std::make_shared<Subset>(d, n.as<std::size_t>());
}

// Shortest round-trip text (0.1307, not 0.13070000000000001) for the resolved recipe.
YAML::Node flow_list(const std::vector<double>& values) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (double v : values) n.push_back(fmt::format("{}", v));
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

Compose build_transforms(YAML::Node list, const InputConfig& input, const std::string& path) {
  std::vector<std::shared_ptr<Transform>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string name = list[i].begin()->first.as<std::string>();
    YAML::Node params = list[i].begin()->second;
    if (name == "normalize") {
      // `model` means the model's default input config, as timm's resolve_data_config.
      if (params["mean"].IsScalar() && params["mean"].Scalar() == "model") params["mean"] = flow_list(input.mean);
      if (params["std"].IsScalar() && params["std"].Scalar() == "model") params["std"] = flow_list(input.std);
    }
    try {
      steps.push_back(Registry<Transform>::instance().get(name).make(
          Config(params, path + "[" + std::to_string(i) + "]." + name)));
    } catch (const std::invalid_argument& e) {
      throw RecipeError(path + "[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return Compose(std::move(steps));
}

// data.batch_transforms; the loss must take the probability targets they make.
std::vector<std::shared_ptr<BatchTransform>> build_batch_transforms(YAML::Node list, const Loss& loss,
                                                                    const YAML::Node& loss_node) {
  std::vector<std::shared_ptr<BatchTransform>> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string name = list[i].begin()->first.as<std::string>(), path = "data.batch_transforms[" + std::to_string(i) + "]";
    try {
      out.push_back(Registry<BatchTransform>::instance().get(name).make(Config(list[i].begin()->second, path + "." + name)));
    } catch (const std::invalid_argument& e) {
      throw RecipeError(path + ": " + e.what());
    }
    if (out.back()->makes_probabilities() && !loss.takes_probabilities())
      throw RecipeError("train.loss: " + loss_node["name"].as<std::string>() + " takes class indices, but " + path +
                        " (" + name + ") makes probability targets: use cross_entropy");
  }
  return out;
}

std::string resolve_device(const std::string& wanted) {
  bool cuda = torch::cuda::is_available();
  if (wanted == "cuda" && !cuda) throw RecipeError("world.device: cuda was asked for but no CUDA device is available");
  return wanted == "auto" ? (cuda ? "cuda" : "cpu") : wanted;
}

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
    if (!job.model->prefers_channels_last()) return;
    if (job.device != "cuda" && !at::hasMKLDNN()) return;
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

// The CPUs this process may run on (its affinity mask: taskset, cgroups' cpusets, srun's binding).
int64_t usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
}

// The `auto` values the typed views need resolved: nproc_per_node, threads_per_proc and
// eval_batch_size. nproc_per_node: auto is one process per GPU on CUDA (torchrun's auto), and one
// process on a CPU, whose threads (threads_per_proc: auto) then use every usable CPU: measured
// faster than torchrun's one process per CPU, which adds a gradient all-reduce to every step
// (bench/README.md, "World layout").
void resolve_auto_values(YAML::Node root) {
  YAML::Node world = root["world"];
  if (world["nproc_per_node"].Scalar() == "auto") {
    const bool cuda = world["device"].Scalar() != "cpu" && torch::cuda::is_available();
    world["nproc_per_node"] = cuda ? std::max<int64_t>(1, torch::cuda::device_count()) : int64_t(1);
  }
  if (world["threads_per_proc"].Scalar() == "auto") {
    // The processes on this node as the launcher that started us says (torchrun, srun, mpirun),
    // else the recipe's layout.
    auto launched = WorldInfo::from_env();
    int64_t procs = std::max<int64_t>(1, launched ? launched->local_world_size : world["nproc_per_node"].as<int64_t>());
    world["threads_per_proc"] = std::max<int64_t>(1, usable_cpus() / procs);
  }
  if (root["data"]["eval_batch_size"].IsNull()) root["data"]["eval_batch_size"] = root["data"]["batch_size"];
}

// model.pretrained as a file to load: a .safetensors path; hf-hub:ORG/NAME[@REVISION] (its
// model.safetensors through the Hub cache huggingface_hub shares, downloaded if missing); true
// (the architecture's published weights). Empty when there is nothing to load (none asked for,
// or `check`, which only says whether a Hub file is cached).
std::string pretrained_file(Job& job, const JobOptions& options) {
  YAML::Node p = job.recipe.root["model"]["pretrained"];
  if (!p || p.IsNull() || p.as<std::string>() == "false") return "";
  std::string spec = p.as<std::string>();
  if (spec == "true") {
    spec = job.model->published_weights();
    if (spec.empty())
      throw RecipeError("model.pretrained: true: " + job.config.model +
                        " has no published weights; name a .safetensors file or hf-hub:ORG/NAME");
    p = spec;  // the resolved recipe says which
  }
  std::optional<HubFile> hub;
  try {
    hub = parse_hf_hub(spec);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model.pretrained: ") + e.what());
  }
  if (!hub) return spec;
  if (!options.download) {
    std::optional<std::filesystem::path> cached = hub_cached(*hub);
    job.notes.push_back("model.pretrained: " + hub->spec() +
                        (cached ? " is cached at " + cached->string() : " would be downloaded from " + hub_url(*hub)));
    return cached ? cached->string() : "";
  }
  try {
    return hf_hub_download(*hub).string();
  } catch (const DownloadError& e) {
    throw WeightsError(std::string("model.pretrained: ") + e.what());
  }
}

void load_pretrained(Job& job, const JobOptions& options) {
  const std::string file = pretrained_file(job, options);
  if (file.empty()) return;
  LoadReport report;
  try {
    report = load_state_dict(*job.model, load_safetensors(file), file, job.model->classifier_pattern());
  } catch (const WeightsError& e) {
    throw WeightsError(std::string("model.pretrained: ") + e.what());
  }
  for (auto& r : report.reinitialised)
    job.notes.push_back("classifier " + r + " re-initialised for " +
                        std::to_string(job.recipe.root["model"]["num_classes"].as<int64_t>()) + " classes");
}

// The model (num_classes: auto from the data), its pretrained weights and the freeze rules.
void build_model(Job& job, const JobOptions& options) {
  YAML::Node model_cfg = job.recipe.root["model"];
  if (model_cfg["num_classes"] && model_cfg["num_classes"].Scalar() == "auto")
    model_cfg["num_classes"] = int64_t(job.data.classes.size());
  // Fewer outputs than classes fails only at the first batch holding a higher label (PyTorch's
  // "Target 9 is out of bounds"); more is allowed, as in a head with spare classes.
  const auto classes = int64_t(job.data.classes.size());
  if (classes > 0 && model_cfg["num_classes"].as<int64_t>() < classes)
    throw RecipeError("model.num_classes: " + model_cfg["num_classes"].as<std::string>() + " outputs for a dataset of " +
                      std::to_string(classes) + " classes (labels 0-" + std::to_string(classes - 1) +
                      "); use auto, or " + std::to_string(classes) + " or more");
  torch::manual_seed(job.config.seed);  // model init is seeded, on every rank alike
  try {
    job.model = Registry<Classifier>::instance().get(job.config.model).make(job.recipe.section("model"));
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("model: ") + e.what());
  }
  if (options.pretrained) load_pretrained(job, options);
  std::vector<int64_t> matched = apply_freeze_rules(*job.model, job.config.freeze);
  for (std::size_t i = 0; i < matched.size(); ++i)
    if (matched[i] == 0)
      job.notes.push_back("freeze[" + std::to_string(i) + "]: '" + job.config.freeze[i].params + "' matches no parameter");
  if (job.trainable_parameters() == 0) throw RecipeError("freeze: the rules leave no parameter trainable");
}

}  // namespace

Job build_job(Recipe recipe, const JobOptions& options) {
  Job job;
  job.recipe = std::move(recipe);
  YAML::Node root = job.recipe.root;
  resolve_auto_values(root);
  job.config = RunConfig::from(root);
  job.threads = job.config.world.threads_per_proc;
  job.device = resolve_device(job.config.world.device);
  resolve_precision(job);
  if (job.config.world.backend == "nccl" && job.device != "cuda")
    throw RecipeError("world.backend: nccl needs CUDA devices (this run is on " + job.device + "); use gloo");

  if (options.data) {
    defer_dataset_downloads(!options.download);  // check: DownloadDeferred says what a run would fetch
    job.data = Registry<Dataset>::instance().get(job.config.dataset).make(job.recipe.section("data.dataset"));
    defer_dataset_downloads(false);
    job.data.train = limit(job.data.train, root["data"]["max_train_samples"]);
    job.data.eval = limit(job.data.eval, root["data"]["max_eval_samples"]);
    if (job.data.train->size() == 0) throw DataError("data.dataset: the training split is empty");
  } else {
    job.data.classes = options.classes;
  }
  build_model(job, options);
  resolve_memory_format(job);
  InputConfig input = job.model->input_config();
  job.train_transforms = build_transforms(root["data"]["train_transforms"], input, "data.train_transforms");
  job.eval_transforms = build_transforms(root["data"]["eval_transforms"], input, "data.eval_transforms");
  job.loss = Registry<Loss>::instance().get(root["train"]["loss"]["name"].as<std::string>()).make(job.recipe.section("train.loss"));
  job.batch_transforms = build_batch_transforms(root["data"]["batch_transforms"], *job.loss, root["train"]["loss"]);
  return job;
}

std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job) { return build_optimizer(job, job.trainable()); }

std::shared_ptr<torch::optim::Optimizer> build_optimizer(const Job& job, const NamedParameters& params) {
  const auto& entry = Registry<torch::optim::Optimizer>::instance().get(job.recipe.root["optimizer"]["name"].as<std::string>());
  try {
    return entry.make(job.recipe.section("optimizer"), params);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
}

std::shared_ptr<Scheduler> build_scheduler(const Job& job, torch::optim::Optimizer& optimizer, int64_t total_steps,
                                           int64_t steps_per_epoch) {
  const auto& entry = Registry<Scheduler>::instance().get(job.recipe.root["scheduler"]["name"].as<std::string>());
  try {
    auto s = entry.make(job.recipe.section("scheduler"), ScheduleContext{&optimizer, total_steps, steps_per_epoch});
    s->set_steps_done(0);
    return s;
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
}

}  // namespace trainrun
