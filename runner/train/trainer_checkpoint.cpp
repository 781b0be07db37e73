// The train loop's side of checkpoints: where a run resumes (the checkpoint rank 0 picks, its
// loop state, callbacks' state and shard streams) and what a save adds besides the trainer's own
// files (the callbacks' files, every rank's shard streams). What a folder holds and how it is
// written: runner/train/checkpoints.h.
#include "runner/train/trainer.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/train/callback_state.h"
#include "runner/train/loss_sums.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace trainrun {

// Rank 0's choice of checkpoint for every rank (resuming across nodes needs output.dir on a
// shared file system, as the Trainer's does).
void TrainLoop::resume() {
  resumed_from_ = resume_point(job_.config.output, *acc_);
  if (resumed_from_) {
    const TrainerState saved = read_trainer_state(*resumed_from_);
    // The launcher refused another job's folder and stopped at a finished run before any worker
    // started; under torchrun, srun or mpirun every rank decides here, on rank 0's checkpoint.
    const ResumePlan plan = plan_resume(job_, acc_->world_size(), *resumed_from_, saved, length_.total_steps);
    if (plan.action == ResumePlan::Action::Refuse) throw RecipeError(plan.line);
    if (plan.action == ResumePlan::Action::Finished) {
      finished_ = plan.line;
      return;
    }
    if (!plan.line.empty() && is_main_process()) spdlog::warn("{}", plan.line);
    fire([&](Callback& c) { c.on_resume(*this, saved); });
    state_ = load_checkpoint(*resumed_from_, parts(), sums_, *acc_, job_.config.seed);
    checkpoints_->keep(*resumed_from_);  // never rotated away
    checkpoint_step_ = state_.global_step;  // saved already
    restore_stateful_callbacks(*this, callbacks_, state_.stateful_callbacks,
                               (std::filesystem::path(*resumed_from_) / kStateFile).string());
    restore_loader_state(*resumed_from_);
    continue_on_this_world();
  }
  state_.job = job_fingerprint(job_, acc_->world_size());
  device_sums_ = std::make_unique<DeviceLossSums>(sums_, acc_->device());
  const TrainConfig& t = job_.config.train;
  state_.max_steps = length_.total_steps;
  state_.num_train_epochs = t.epochs;
  state_.logging_steps = t.log_every_steps;
  state_.eval_steps = t.eval_steps;
  state_.save_steps = job_.config.output.save_steps();
  state_.train_batch_size = job_.config.data.batch_size;
}

namespace {

// The loss sums of the log window and of the run so far as this world's ranks would hold them:
// the logged loss is the mean over ranks of each rank's mean micro-batch loss, so every rank gets
// the checkpoint's means, over the micro-batches it would have run in those steps (`scale` = the
// checkpoint's examples per micro-batch over the world / this world's).
LoopSums sums_on_this_world(const std::vector<LoopSums>& ranks, double scale) {
  LoopSums out;
  if (ranks.empty()) return out;
  double window = 0, total = 0;
  for (const LoopSums& r : ranks) {
    if (r.batches_since_log > 0) window += r.loss_since_log / double(r.batches_since_log);
    if (r.batches_total > 0) total += r.loss_total / double(r.batches_total);
  }
  const double n = double(ranks.size());
  out.batches_since_log = std::llround(double(ranks.front().batches_since_log) * scale);
  out.batches_total = std::llround(double(ranks.front().batches_total) * scale);
  out.loss_since_log = window / n * double(out.batches_since_log);
  out.loss_total = total / n * double(out.batches_total);
  return out;
}

}  // namespace

// A checkpoint of another world (processes, or examples per process): the epoch goes on from
// the same example of its order. Each epoch's order is one permutation of the training split from
// (seed, epoch), and micro-batch m of every process takes its examples [m W b, (m + 1) W b)
// (DistributedSampler's strided shards), whatever W and b are; so skipping the examples the
// checkpoint's world consumed gives every later optimizer step the examples, and the augmentation
// (drawn from seed, epoch and example), it would have had, as long as the global batch
// (data.global_batch_size) is the same. Only the end of the epoch, padded to a multiple of W,
// differs. Shard streams take up the examples their epoch has left (restore_loader_state).
void TrainLoop::continue_on_this_world() {
  const int64_t w_old = state_.world_size, b_old = state_.train_batch_size;
  const int64_t w = acc_->world_size(), b = job_.config.data.batch_size;
  if ((w_old == w && b_old == b) || b_old <= 0) return;
  sums_ = sums_on_this_world(state_.ranks, double(w_old * b_old) / double(w * b));
  const int64_t n = int64_t(train_loader_->dataset().size());
  // A stream has no padding: num_samples / W examples per process (stream_loader.h).
  const int64_t per_process = train_loader_->streaming() ? n / w_old : (n + w_old - 1) / w_old;
  const int64_t old_batches = (per_process + b_old - 1) / b_old;
  if (state_.batches_in_epoch >= old_batches) {
    state_.batches_in_epoch = length_.batches_per_epoch;  // the epoch was over: the next one starts
    return;
  }
  const int64_t consumed = state_.batches_in_epoch * w_old * b_old, per = w * b;
  state_.batches_in_epoch = consumed / per;
  if (!is_main_process()) return;
  if (consumed % per != 0)
    spdlog::warn("{} process(es) x {} examples do not divide the {} examples of epoch {} the checkpoint's {} x {} "
                 "consumed: examples {} to {} of the epoch's order are trained again (keep data.global_batch_size "
                 "for an exact continuation)", w, b, consumed, state_.epoch_index, w_old, b_old, consumed / per * per,
                 consumed - 1);
  else
    spdlog::info("Continuing epoch {} at example {} of its order on {} process(es) x {} (the checkpoint's world: {} x {})",
                 state_.epoch_index, consumed, w, b, w_old, b_old);
  if (state_.max_steps > 0 && state_.max_steps != length_.total_steps)
    spdlog::warn("the run was {} optimizer steps long on the checkpoint's world and is {} on this one: the schedule "
                 "and the steps left change (data.global_batch_size keeps them)", state_.max_steps, length_.total_steps);
}

// The shard streams continue where the checkpoint's were (their positions and shuffle buffers),
// regrouped onto this world's streams when the world size or data.workers changed; a checkpoint
// without them makes the loader replay the epoch's batches instead (loader.h).
void TrainLoop::restore_loader_state(const std::string& folder) {
  if (!train_loader_->streaming()) return;
  const std::filesystem::path file = std::filesystem::path(folder) / kLoaderStateFile;
  std::ifstream in(file);
  if (!in) {
    spdlog::warn("{}: not in the checkpoint; the epoch's batches are replayed up to step {}", file.string(),
                 state_.global_step);
    return;
  }
  try {
    nlohmann::json all = nlohmann::json::parse(in);
    (void)all.at("ranks").at(0);  // at least one rank's state
    train_loader_->restore(all);  // every rank's: another world regroups them (stream_loader.h)
  } catch (const nlohmann::json::exception& e) {
    throw TrainingError(file.string() + ": not a loader state trainrun wrote: " + e.what());
  }
}

// A checkpoint of this step (unless output.save_every is never or this step has one), then
// on_save as the Trainer fires it: whenever a save was asked for.
void TrainLoop::save_now() {
  state_.stateful_callbacks = stateful_callbacks(callbacks_, control_);
  control_.should_save = false;
  if (job_.config.output.enabled() && checkpoint_step_ != state_.global_step) write_checkpoint();
  fire([&](Callback& c) { c.on_save(*this, control_); });
}

// Every rank takes part (the gather of RNG states and loss sums); rank 0 writes.
void TrainLoop::write_checkpoint() {
  auto began = std::chrono::steady_clock::now();
  state_.epoch = double(state_.epoch_index) + double(state_.batches_in_epoch) / double(length_.batches_per_epoch);
  CheckpointFiles files;
  fire([&](Callback& c) { c.on_save_checkpoint(*this, files); });
  if (train_loader_->streaming()) files.add(kLoaderStateFile, gather_loader_states());
  std::string folder = checkpoints_->save(parts(), state_, loop_sums(), unsaved_eval_, files.files());
  unsaved_eval_.reset();
  checkpoint_step_ = state_.global_step;
  if (is_main_process()) spdlog::info("Saving model checkpoint to {} ({:.2f} s)", folder, seconds_since(began));
}

// Each rank's shard streams (where every stream reads next and what its shuffle buffer holds),
// gathered to rank 0 as one JSON document: {"world_size": N, "ranks": [state of rank 0, ...]}.
// Every rank calls it.
std::string TrainLoop::gather_loader_states() {
  const std::string own = train_loader_->state().dump();
  at::Tensor bytes = at::empty({int64_t(own.size())}, at::kByte);
  std::memcpy(bytes.data_ptr(), own.data(), own.size());
  at::Tensor all = acc_->gather_for_metrics(bytes.to(acc_->device())).cpu();
  at::Tensor lengths = acc_->gather_for_metrics(at::full({1}, int64_t(own.size()), at::kLong).to(acc_->device())).cpu();
  nlohmann::json out{{"world_size", acc_->world_size()}, {"ranks", nlohmann::json::array()}};
  const char* p = static_cast<const char*>(all.data_ptr());
  for (int64_t r = 0, at = 0; r < lengths.size(0); ++r) {
    const int64_t n = lengths[r].item<int64_t>();
    out["ranks"].push_back(nlohmann::json::parse(std::string(p + at, std::size_t(n))));
    at += n;
  }
  return out.dump() + "\n";
}

}  // namespace trainrun
