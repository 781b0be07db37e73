#include "runner/train/trainer.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/io/weights.h"
#include "runner/logging/logging.h"
#include "runner/recipe/freeze.h"
#include "runner/train/activation_checkpointing.h"
#include "runner/train/autocast.h"
#include "runner/train/loss_sums.h"
#include "runner/train/run_folder.h"
#include "support/durable_file.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

}  // namespace

double TrainLoop::seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

AcceleratorOptions accelerator_options(const Job& job) {
  AcceleratorOptions o;
  o.world = job.config.world;
  o.device = job.device;
  return o;
}

LoaderOptions loader_options(const Job& job, bool train) {
  const DataConfig& data = job.config.data;
  LoaderOptions o;
  o.batch_size = train ? data.batch_size : data.eval_batch_size;
  o.workers = data.workers;
  o.skip_bad_files = data.skip_bad_files;
  o.shard.shuffle = train;
  o.shard.pad = train;
  o.shard.seed = job.config.seed;
  if (train) {
    o.batch_transforms = job.batch_transforms;
    o.shard.weights = job.sample_weights;  // data.sampler: weighted
    if (const char* dir = std::getenv("TRAINRUN_RECORD_SAMPLE_IDS")) o.record_ids = dir;  // tests only
  }
  o.num_classes = int64_t(job.data.classes.size());
  o.pin_memory = job.device == "cuda";
  return o;
}

TrainLoop::TrainLoop(Job& job, const WorldInfo& world, std::vector<std::shared_ptr<Callback>> callbacks)
    : job_(job), world_(world), callbacks_(std::move(callbacks)), scaler_(job.precision == "fp16") {
  at::set_num_threads(int(job.threads));
  acc_ = std::make_unique<Accelerator>(world, accelerator_options(job));
  prepare_run_folder(job, *acc_);
  set_activation_checkpointing(*job.model, job.config.train.checkpoint_stages);
  ddp_ = acc_->prepare(job.model);
  train_loader_ = std::make_unique<DataLoader>(job.data.train, job.train_transforms,
                                               acc_->prepare(loader_options(job, true), true));
  eval_loader_ = std::make_unique<DataLoader>(job.data.eval, job.eval_transforms,
                                              acc_->prepare(loader_options(job, false), false));
  // The same count `trainrun check` and the preflight print (the loader's shard agrees with it).
  length_ = run_length(job, acc_->world_size());
  if (train_loader_->batches_per_epoch() != length_.batches_per_epoch)
    throw TrainingError("internal: the loader has " + std::to_string(train_loader_->batches_per_epoch()) +
                        " batches per epoch, the run length says " + std::to_string(length_.batches_per_epoch));
  opt_ = build_optimization(job, length_.total_steps, length_.steps_per_epoch);
  checkpoints_ = std::make_unique<Checkpoints>(job.config.output, *acc_);
  // Dropout and other in-model randomness: the same seed on every rank, as a PyTorch script
  // that calls torch.manual_seed(seed) before training.
  torch::manual_seed(job.config.seed);
  refresh_trainable();
  fire([&](Callback& c) { c.on_init_end(*this); });
}

TrainLoop::~TrainLoop() = default;

int64_t TrainLoop::rank() const { return acc_->rank(); }

int64_t TrainLoop::world_size() const { return acc_->world_size(); }

Classifier& TrainLoop::model() { return ddp_->module(); }

TrainingParts TrainLoop::parts() { return TrainingParts{ddp_->module(), *opt_.optimizer, *opt_.scheduler, scaler_}; }

const LoopSums& TrainLoop::loop_sums() { return device_sums_->read(); }

at::Tensor TrainLoop::take_nonfinite_loss() { return device_sums_->take_nonfinite(); }

void TrainLoop::refresh_trainable() {
  trainable_.clear();
  for (auto& [_, p] : job_.trainable()) trainable_.push_back(p);
}

void TrainLoop::add_trainable(const NamedParameters& params) {
  add_param_groups(job_, *opt_.optimizer, params);
  opt_.scheduler->set_steps_done(opt_.scheduler->steps_done());  // the new groups' lr for this step
  refresh_trainable();
  ddp_.reset();  // the old reducer's autograd hooks go before the new reducer's come
  ddp_ = acc_->prepare(job_.model);
}

EvalResult TrainLoop::evaluate_model() { return evaluate(ddp_->module(), *eval_loader_, *job_.loss, job_, *acc_); }

// Callbacks hear of a failure (not of a stop a signal asked for: that one ended with on_train_end)
// before it goes on to the command line.
EvalResult TrainLoop::train() {
  try {
    return run_loop();
  } catch (const TrainingInterrupted&) {
    throw;
  } catch (const std::exception& e) {
    for (auto& c : callbacks_) {
      try {
        c->on_exception(*this, e);
      } catch (const std::exception& inner) {
        spdlog::warn("a callback's on_exception failed: {}", inner.what());
      }
    }
    throw;
  }
}

EvalResult TrainLoop::run_loop() {
  resume();
  if (!finished_.empty()) {
    if (is_main_process()) spdlog::info("{}", finished_);
    return last_eval_;  // no summary: nothing was trained
  }
  log_banner(job_, world_, *acc_, length_);
  int64_t first_epoch = state_.epoch_index, skip = state_.batches_in_epoch;
  if (skip >= length_.batches_per_epoch) ++first_epoch, skip = 0;
  if (resumed_from_) log_resume(*resumed_from_, first_epoch, state_.global_step, skip);
  if (job_.config.data.synthetic) hold_synthetic_batch(first_epoch, skip);
  fire([&](Callback& c) { c.on_train_begin(*this, control_); });
  start_ = Clock::now();
  window_ = LogWindow();
  first_step_ = state_.global_step;
  opt_.optimizer->zero_grad();
  for (int64_t epoch = first_epoch; epoch < job_.config.train.epochs && !control_.should_training_stop; ++epoch)
    run_epoch(epoch, epoch == first_epoch ? skip : 0);
  fire([&](Callback& c) { c.on_loop_end(*this, control_); });
  if (control_.should_evaluate) evaluate_now();
  if (control_.should_save) save_now();
  fire([&](Callback& c) { c.on_train_end(*this, control_); });
  return finish();
}

void TrainLoop::set_train_mode() {
  ddp_->module().train();
  if (job_.config.train.bn_eval) freeze_batchnorm_statistics(ddp_->module());
}

void TrainLoop::run_epoch(int64_t epoch, int64_t skip) {
  state_.epoch_index = epoch;
  state_.batches_in_epoch = skip;
  fire([&](Callback& c) { c.on_epoch_begin(*this, control_); });
  set_train_mode();
  if (!synthetic_) train_loader_->start_epoch(epoch, skip);
  for (;;) {
    auto wait_start = Clock::now();
    auto batch = next_batch();
    window_.data_wait += seconds_since(wait_start);
    if (!batch) break;
    if (!forward_backward(*batch)) continue;
    const bool ends_epoch = state_.batches_in_epoch == length_.batches_per_epoch;
    step(ends_epoch);
    if (control_.should_training_stop && !ends_epoch) return;  // an early stop
  }
  end_epoch();
}

// data.synthetic (the step alone, as timm's benchmark.py times it: one batch already on the
// device): the batch the run starts with, loaded before the clock starts by a loader of its own
// with no workers, so that no thread goes on decoding batches nobody takes; the run's loader is
// never started.
void TrainLoop::hold_synthetic_batch(int64_t epoch, int64_t skip) {
  LoaderOptions options = acc_->prepare(loader_options(job_, true), true);
  options.workers = 0;
  DataLoader once(job_.data.train, job_.train_transforms, options);
  once.start_epoch(epoch, skip);
  std::optional<Batch> first = once.next();
  if (!first) throw TrainingError("internal: data.synthetic: the training split gave no batch");
  synthetic_ = Batch{first->inputs.to(acc_->device()), first->targets.to(acc_->device())};
}

std::optional<Batch> TrainLoop::next_batch() {
  if (!synthetic_) return train_loader_->next();
  if (state_.batches_in_epoch >= length_.batches_per_epoch) return std::nullopt;
  return synthetic_;
}

bool TrainLoop::forward_backward(const Batch& batch) {
  const int64_t accum = job_.config.train.grad_accum_steps;
  const int64_t micro = ++state_.batches_in_epoch;
  if ((micro - 1) % accum == 0) fire([&](Callback& c) { c.on_step_begin(*this, control_); });
  // Accumulation micro-steps skip DDP's gradient sync (no_sync); the last batch of an epoch
  // closes a partial group, as the Trainer does.
  const bool closes_step = micro % accum == 0 || micro == length_.batches_per_epoch;
  ddp_->set_gradient_sync(closes_step);
  // Asynchronous from the loader's pinned memory (loader_options): the copy is queued on the
  // device's stream ahead of the forward, and the host goes on without waiting for it.
  TrainBatch b{batch.inputs.to(acc_->device(), /*non_blocking=*/true),
               batch.targets.to(acc_->device(), /*non_blocking=*/true), micro - 1};
  fire([&](Callback& c) { c.on_train_batch_begin(*this, b); });
  at::Tensor x = job_.channels_last ? b.inputs.contiguous(at::MemoryFormat::ChannelsLast) : b.inputs;
  StepOutput out;
  {
    Autocast autocast(job_.precision, acc_->device());
    out.outputs = ddp_->forward(x);
  }
  out.outputs = out.outputs.to(at::kFloat);
  out.loss = (*job_.loss)(out.outputs, b.targets, ddp_->module().outputs_log_probs());
  fire([&](Callback& c) { c.on_before_backward(*this, b, out); });
  acc_->backward(scaler_.scale(accum > 1 ? out.loss / double(accum) : out.loss));  // mean over the k micro-batches
  fire([&](Callback& c) { c.on_after_backward(*this, b); });
  window_.examples += b.targets.size(0), session_examples_ += b.targets.size(0);
  device_sums_->add(out.loss, /*stop_on_nonfinite=*/!scaler_.enabled());
  return closes_step;
}

// The optimizer step and what callbacks ask after it. The step that ends an epoch is saved (and
// stopped at) after the epoch's evaluation.
void TrainLoop::step(bool ends_epoch) {
  grad_norm_ = prepare_optimizer_step(scaler_, trainable_, job_.config.train.max_grad_norm, control_.should_log);
  fire([&](Callback& c) { c.on_pre_optimizer_step(*this, control_); });
  take_optimizer_step(opt_, scaler_);
  fire([&](Callback& c) { c.on_optimizer_step(*this, control_); });
  opt_.optimizer->zero_grad();
  ++state_.global_step, ++window_.steps;
  fire([&](Callback& c) { c.on_step_end(*this, control_); });
  if (control_.should_log) log_training();
  if (control_.should_evaluate) evaluate_now();
  if (ends_epoch) return;
  if (control_.should_save) save_now();
  if (control_.should_training_stop && control_.stop_exit_code) stop_now();
}

void TrainLoop::end_epoch() {
  fire([&](Callback& c) { c.on_epoch_end(*this, control_); });
  if (control_.should_evaluate) evaluate_now();
  if (control_.should_save) save_now();
  if (control_.should_training_stop && control_.stop_exit_code) stop_now();
}

void TrainLoop::log(const nlohmann::ordered_json& line) {
  state_.log_history.push_back(line);
  fire([&](Callback& c) { c.on_log(*this, line); });
}

// The training log line, then a new window. Loss, throughput and data wait are combined over
// ranks as the Trainer logs them: a collective, every rank calls it.
void TrainLoop::log_training() {
  control_.should_log = false;
  const LoopSums& sums = device_sums_->read();
  double seconds = seconds_since(window_.start);
  at::Tensor t = acc_->reduce_sum(at::tensor({sums.loss_since_log / double(sums.batches_since_log),
                                              double(window_.examples), window_.data_wait}, at::kDouble));
  auto v = t.accessor<double, 1>();
  const double world = double(acc_->world_size());
  log({{"loss", v[0] / world},
       {"grad_norm", grad_norm_.value_or(0.0)},
       {"learning_rate", current_lr(*opt_.optimizer)},
       {"epoch", epoch_progress()},
       {"step", state_.global_step},
       {"samples_per_second", v[1] / seconds},
       {"step_time_s", seconds / double(window_.steps)},
       {"data_wait_s", v[2] / world / double(window_.steps)},
       {"elapsed_s", seconds_since(start_)}});
  device_sums_->start_log_window();
  window_ = LogWindow();
}

void TrainLoop::evaluate_now() {
  control_.should_evaluate = false;
  fire([&](Callback& c) { c.on_evaluate_begin(*this, control_); });
  last_eval_ = evaluate_model();
  fire([&](Callback& c) { c.on_evaluation_metrics(*this, last_eval_); });
  nlohmann::ordered_json line = eval_line(last_eval_, job_.config.train.metrics, state_.global_step, epoch_progress());
  unsaved_eval_ = line;
  log(line);
  const auto& wanted = job_.config.train.metrics;
  if (std::find(wanted.begin(), wanted.end(), kPerClassMetric) != wanted.end())
    spdlog::info("\n{}", per_class_table(last_eval_, job_.data.classes));  // rank 0's console and train.log
  opt_.scheduler->observe(last_eval_.metrics);  // reduce_on_plateau decides here, as torch's step(val_loss)
  fire([&](Callback& c) { c.on_evaluate(*this, control_, last_eval_, line); });
  set_train_mode();
}

// Every rank exits only once rank 0 has written the checkpoint: launchers that end a job at its
// first non-zero exit (mpirun, torchrun, srun --kill-on-bad-exit) would cut the save.
void TrainLoop::stop_now() {
  acc_->wait_for_everyone();
  fire([&](Callback& c) { c.on_train_end(*this, control_); });
  const int64_t step = state_.global_step;
  throw TrainingInterrupted(control_.stop_reason + " at step " + std::to_string(step) +
                                (checkpoint_step_ == step ? "; checkpoint saved" : ""),
                            control_.stop_exit_code);
}

// The summary (the mean loss over every micro-batch of the run, resumed ones too, then over
// ranks) and model.safetensors.
EvalResult TrainLoop::finish() {
  double runtime = seconds_since(start_);
  double samples = acc_->reduce_sum(at::scalar_tensor(double(session_examples_), at::kDouble)).item<double>();
  device_sums_->read();
  double train_loss = acc_->mean(sums_.loss_total / double(std::max<int64_t>(sums_.batches_total, 1)));
  acc_->wait_for_everyone();
  if (!acc_->is_main_process()) return last_eval_;
  const std::string weights = (fs::path(output_dir()) / kModelFile).string();
  const CheckpointOptions& output = job_.config.output;
  spdlog::info("\n\nTraining completed.\n");
  if (output.load_best_model_at_end && !state_.best_model_checkpoint.empty()) {
    // transformers' load_best_model_at_end: the best checkpoint's weights (its EMA's when the
    // metric judged the EMA) become the run's model, byte for byte.
    const bool ema = output.best_metric.rfind("eval_ema_", 0) == 0;
    const fs::path best = fs::path(state_.best_model_checkpoint) / (ema ? kEmaModelFile : kModelFile);
    spdlog::info("Loading best model from {} ({}: {})", best.string(), output.best_metric, state_.best_metric.value_or(NAN));
    std::ifstream in(best, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) throw TrainingError("output.load_best_model_at_end: cannot read " + best.string());
    write_file_atomic(weights, bytes.str());
  } else {
    save_safetensors(weights, state_dict(ddp_->module()));
  }
  log({{"train_runtime", runtime},
       {"train_samples_per_second", samples / runtime},
       {"train_steps_per_second", double(state_.global_step - first_step_) / runtime},
       {"train_loss", train_loss},
       {"epoch", epoch_progress()},
       {"step", state_.global_step}});
  spdlog::info("Saved {}", weights);
  return last_eval_;
}

}  // namespace trainrun
