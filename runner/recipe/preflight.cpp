#include "runner/recipe/preflight.h"

#include "components/callbacks/callback.h"
#include "components/callbacks/checkpoint_format.h"
#include "components/data/streaming_dataset.h"
#include "runner/io/checkpoint.h"
#include "runner/recipe/freeze.h"

#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace trainrun {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The first example of `data` that decodes (a file that does not is the loader's business,
// as data.on_bad_file says); none when the split is empty or the first few are unreadable.
std::optional<Example> first_readable(const Dataset& data) {
  for (std::size_t i = 0; i < std::min<std::size_t>(data.size(), 8); ++i) {
    try {
      return data.get(i);
    } catch (const UnreadableFile&) {
    }
  }
  return std::nullopt;
}

// One example through `transforms` and the model, as a batch of one in eval mode without
// gradients (no state changes, no random numbers drawn from torch's generator).
void try_pipeline(const Job& job, const Dataset& data, const Compose& transforms, const std::string& key) {
  auto example = first_readable(data);
  if (!example) return;
  at::Tensor x;
  try {
    Rng rng(0);
    x = transforms(example->image, rng);
  } catch (const std::exception& e) {
    throw RecipeError(key + ": cannot transform an example: " + first_line(e.what()));
  }
  if (x.scalar_type() != at::kFloat || x.dim() != 3)
    throw RecipeError(key + ": the pipeline ends with a " + std::string(c10::toString(x.scalar_type())) + " tensor of shape " +
                      c10::str(x.sizes()) + ", not a float C x H x W image (end it with to_tensor, then normalize)");
  torch::NoGradGuard no_grad;
  bool training = job.model->is_training();
  job.model->eval();
  try {
    job.model->forward(x.unsqueeze(0));
  } catch (const std::exception& e) {
    job.model->train(training);
    throw RecipeError(key + ": " + job.config.model + " cannot take its output (" +
                      c10::str(x.sizes()) + "): " + first_line(e.what()));
  }
  job.model->train(training);
}

}  // namespace

RunLength run_length(const Job& job, int64_t world_size) {
  RunLength r;
  r.world_size = world_size;
  const int64_t examples = int64_t(job.data.train->size()), batch = job.config.data.batch_size;
  const int64_t accum = job.config.train.grad_accum_steps;
  // A sampler pads to a multiple of the world size (DistributedSampler); shards are read as
  // streams of num_samples / world each (components/data/loader/loader.h).
  r.examples_per_rank = streaming_source(*job.data.train) ? examples / world_size : (examples + world_size - 1) / world_size;
  r.batches_per_epoch = (r.examples_per_rank + batch - 1) / batch;
  r.steps_per_epoch = (r.batches_per_epoch + accum - 1) / accum;
  r.total_steps = r.steps_per_epoch * job.config.train.epochs;
  return r;
}

CheckedOptimization checked_optimization(const Job& job, int64_t total_steps, int64_t steps_per_epoch) {
  CheckedOptimization out;
  try {
    out.optimizer = build_optimizer(job);
  } catch (const c10::Error& e) {
    throw RecipeError("optimizer: " + first_line(e.what_without_backtrace()));
  }
  if (steps_per_epoch <= 0) return out;
  try {
    out.scheduler = build_scheduler(job, *out.optimizer, total_steps, steps_per_epoch);
  } catch (const c10::Error& e) {
    throw RecipeError("scheduler: " + first_line(e.what_without_backtrace()));
  }
  return out;
}

RunLength preflight(const Job& job, int64_t world_size) {
  const int64_t examples = int64_t(job.data.train->size());
  if (world_size > examples)
    throw RecipeError("world: " + std::to_string(world_size) + " processes for " + std::to_string(examples) +
                      " training examples; every process needs at least one (fewer processes, or more data)");
  RunLength length = run_length(job, world_size);
  checked_optimization(job, length.total_steps, length.steps_per_epoch);
  for (const ComponentConfig& c : job.config.callbacks) Registry<Callback>::instance().get(c.name).make(c.config)->check(job);
  try_pipeline(job, *job.data.train, job.train_transforms, "data.train_transforms");
  if (job.data.eval && !job.eval_transforms_pending)
    try_pipeline(job, *job.data.eval, job.eval_transforms, "data.eval_transforms");
  return length;
}

void check_resume_fits(const Job& job) {
  std::optional<std::string> from;
  TrainerState saved;
  try {
    from = planned_resume_point(job.config.output);
    if (!from) return;
    saved = read_trainer_state(*from);
  } catch (const CheckpointError&) {
    return;  // a checkpoint that cannot be read is the run's error to report, as it always was
  }
  for (int64_t e = 1; e <= saved.epoch_index; ++e)
    if (freeze_changes_at(job, e)) return;
  auto optimizer = build_optimizer(job);
  const std::string file = (std::filesystem::path(*from) / kOptimizerFile).string();
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(file);
  } catch (const c10::Error&) {
    return;  // unreadable: the run's error, as above
  }
  try {
    optimizer->load(archive);
  } catch (const c10::Error& e) {
    std::string why = first_line(e.what_without_backtrace());
    if (why.find("INTERNAL ASSERT") != std::string::npos) why = "its state is another optimizer's";
    throw RecipeError("output.resume: " + file + " does not fit optimizer " + job.config.optimizer + " over " +
                      std::to_string(job.trainable().size()) + " trainable tensors (" + why +
                      "): it was saved with another optimizer, other no_decay groups or other freeze rules; output.resume: never, or "
                      "another output.dir, starts afresh");
  }
}

void check_output_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path existing = fs::path(dir).lexically_normal();
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_relative_path()) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  const std::string key = "output.dir: " + dir + ": ";
  if (!fs::is_directory(existing, ec)) throw RecipeError(key + existing.string() + " is a file, not a folder");
  // access() is what the kernel would answer to the mkdir: EROFS on a read-only mount even for
  // root, who passes every permission check.
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    throw RecipeError(key + (existing == fs::path(dir).lexically_normal() ? "cannot write in it: "
                                                                           : "cannot create it in " + existing.string() + ": ") +
                      std::strerror(errno));
}

}  // namespace trainrun
