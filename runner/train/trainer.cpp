#include "runner/train/trainer.h"

#include "components/data/loader.h"
#include "runner/io/checkpoint.h"
#include "runner/io/durable_file.h"
#include "runner/logging/logging.h"
#include "runner/train/loss_scaler.h"
#include "runner/recipe/preflight.h"
#include "runner/logging/progress.h"
#include "runner/logging/run_log.h"
#include "runner/distributed/stop_signal.h"
#include "runner/io/weights.h"

#include <ATen/autocast_mode.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// torch.autocast(device_type, dtype) as a scope: bf16 on CPU or CUDA, fp16 on CUDA only.
class Autocast {
 public:
  Autocast(const std::string& precision, const c10::Device& device)
      : on_(precision == "bf16" || precision == "fp16"), cuda_(device.is_cuda()) {
    if (!on_) return;
    at::ScalarType dtype = precision == "bf16" ? at::kBFloat16 : at::kHalf;
    prev_ = cuda_ ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
    if (cuda_) {
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(dtype);
    } else {
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(dtype);
    }
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (cuda_) at::autocast::set_enabled(prev_);
    else at::autocast::set_cpu_enabled(prev_);
  }

 private:
  bool on_, cuda_;
  bool prev_ = false;
};

}  // namespace

LoaderOptions loader_options(const Job& job, bool train) {
  const DataConfig& data = job.config.data;
  LoaderOptions o;
  o.batch_size = train ? data.batch_size : data.eval_batch_size;
  o.workers = data.workers;
  o.skip_bad_files = data.skip_bad_files;
  o.shard.shuffle = train;
  o.shard.pad = train;
  o.shard.seed = job.config.seed;
  return o;
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  try {
    write_file_atomic(path, text);
  } catch (const FileWriteError& e) {
    throw TrainingError(e.what());
  }
}

// The run folder (rank 0 makes it): the resolved recipe, labels.json, train.log; the job's
// notes are logged once.
fs::path prepare_run_folder(const Job& job, Accelerator& acc) {
  fs::path dir = job.config.output.dir;
  const bool main_process = acc.is_main_process();
  if (main_process) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw TrainingError(dir.string() + ": cannot create the run folder: " + ec.message());
    write_text(dir / "recipe.resolved.yaml", job.recipe.dump());
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
  return dir;
}

// The sizes the banner shows.
struct RunShape {
  int64_t epochs, batch, accum, total_steps;
};

// The Trainer's "***** Running training *****" banner.
void log_banner(const Job& job, const WorldInfo& world, const Accelerator& acc, const RunShape& run) {
  spdlog::info("***** Running training *****");
  spdlog::info("  Num examples = {}", thousands(int64_t(job.data.train->size())));
  spdlog::info("  Num Epochs = {}", run.epochs);
  spdlog::info("  Instantaneous batch size per device = {}", run.batch);
  spdlog::info("  Total train batch size (w. parallel, distributed & accumulation) = {}",
               run.batch * acc.world_size() * run.accum);
  spdlog::info("  Gradient Accumulation steps = {}", run.accum);
  spdlog::info("  Total optimization steps = {}", thousands(run.total_steps));
  spdlog::info("  Number of trainable parameters = {} (of {})", thousands(job.trainable_parameters()),
               thousands(job.total_parameters()));
  spdlog::info("  World = {} node{} x {} process{} ({} backend, launched by {}), {} threads per process",
               world.nnodes, world.nnodes > 1 ? "s" : "", world.local_world_size, world.local_world_size > 1 ? "es" : "",
               acc.backend(), world.launcher, job.threads);
  spdlog::info("  Device = {}, precision = {}", acc.device().str(), job.precision);
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

// An evaluation's metrics.jsonl line (eval_loss, the runtime figures and the metrics the recipe
// asks for) and, in *shown, the console's {...} line.
nlohmann::ordered_json eval_line(const EvalResult& r, const std::vector<std::string>& metrics, int64_t step,
                                 double epoch, std::vector<std::pair<std::string, double>>* shown) {
  nlohmann::ordered_json line;
  for (const char* key : {"eval_loss", "eval_accuracy", "eval_top5", "eval_runtime", "eval_samples_per_second"}) {
    bool wanted = std::string(key) != "eval_accuracy" && std::string(key) != "eval_top5";
    for (auto& m : metrics) wanted |= "eval_" + m == key;
    if (!wanted) continue;
    shown->emplace_back(key, r.metrics.at(key));
    line[key] = r.metrics.at(key);
  }
  line["eval_examples"] = r.examples;
  line["epoch"] = epoch;
  line["step"] = step;
  shown->emplace_back("epoch", std::round(epoch * 100) / 100);
  return line;
}

// This rank's figures since the last training log line.
struct LogWindow {
  Clock::time_point start = Clock::now();
  double data_wait = 0;  // seconds spent waiting for batches
  int64_t steps = 0, examples = 0;
};

// LoopSums kept on the device: a micro-batch adds its loss without a host read (on CUDA a read
// waits for the GPU). The host copy is read back when a log line, a checkpoint or the end needs
// it, and uploaded after a resume; the device adds the same doubles in the same order as the
// host would, so the sums are the same to the bit.
class DeviceLossSums {
 public:
  DeviceLossSums(LoopSums& host, c10::Device device) : host_(host), device_(device) { upload(); }
  void upload() {
    values_ = at::tensor({host_.loss_since_log, double(host_.batches_since_log), host_.loss_total,
                          double(host_.batches_total)}, at::kDouble).to(device_);
    nonfinite_ = at::zeros({}, values_.options());
  }
  // A micro-batch's loss: a finite one joins the sums; a nan/inf one is remembered for the step's
  // agreement when `stop_on_nonfinite` (fp32/bf16) and left out either way (fp16: GradScaler
  // skips the step; as the Trainer's logging_nan_inf_filter, it stays out of the logged mean).
  void add(const at::Tensor& loss, bool stop_on_nonfinite) {
    at::Tensor l = loss.detach().to(at::kDouble), finite = at::isfinite(l);
    at::Tensor counted = at::where(finite, l, at::zeros_like(l)), one = finite.to(at::kDouble);
    values_ += at::stack({counted, one, counted, one});
    if (stop_on_nonfinite) nonfinite_ = at::where(finite, nonfinite_, l);
  }
  // The last non-finite loss since the previous call (nan, inf or -inf; 0 if none) as a device
  // scalar, and a fresh start.
  at::Tensor take_nonfinite() {
    at::Tensor loss = nonfinite_;
    nonfinite_ = at::zeros({}, values_.options());
    return loss;
  }
  LoopSums& read() {
    at::Tensor v = values_.cpu();
    auto a = v.accessor<double, 1>();
    host_.loss_since_log = a[0], host_.batches_since_log = int64_t(a[1]);
    host_.loss_total = a[2], host_.batches_total = int64_t(a[3]);
    return host_;
  }
  void start_log_window() {
    host_.loss_since_log = 0, host_.batches_since_log = 0;
    values_.narrow(0, 0, 2).zero_();
  }

 private:
  LoopSums& host_;
  c10::Device device_;
  at::Tensor values_;     // loss_since_log, batches_since_log, loss_total, batches_total
  at::Tensor nonfinite_;  // double scalar: the last nan/inf loss, or 0
};

// The training log line (console and metrics.jsonl), then a new window. Loss, throughput and
// data wait are combined over ranks as the Trainer logs them: a collective, every rank calls it.
void log_training(const Accelerator& acc, RunLog* log, double grad_norm, double lr, double epoch, int64_t step,
                  double elapsed, DeviceLossSums& device_sums, LogWindow& window) {
  const LoopSums& sums = device_sums.read();
  double seconds = seconds_since(window.start);
  at::Tensor t = acc.reduce_sum(at::tensor({sums.loss_since_log / double(sums.batches_since_log),
                                            double(window.examples), window.data_wait}, at::kDouble));
  auto v = t.accessor<double, 1>();
  double mean = v[0] / double(acc.world_size());
  spdlog::info("{}", python_dict({{"loss", std::round(mean * 1e4) / 1e4}, {"grad_norm", grad_norm},
                                  {"learning_rate", lr}, {"epoch", std::round(epoch * 100) / 100}}));
  if (log)
    log->write({{"loss", mean},
                {"grad_norm", grad_norm},
                {"learning_rate", lr},
                {"epoch", epoch},
                {"step", step},
                {"samples_per_second", v[1] / seconds},
                {"step_time_s", seconds / double(window.steps)},
                {"data_wait_s", v[2] / double(acc.world_size()) / double(window.steps)},
                {"elapsed_s", elapsed}});
  device_sums.start_log_window();
  window = LogWindow();
}

// The global L2 norm of the gradients, as torch.nn.utils.clip_grad_norm_ computes (and the
// Trainer logs as grad_norm): the norm of the per-parameter norms.
double global_grad_norm(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().detach().norm(2));
  return norms.empty() ? 0.0 : at::stack(norms).norm(2).item<double>();
}

// Optimizer and scheduler over the currently trainable parameters: one place, so that a
// change of the freeze rules mid-run can build them again.
struct Optimization {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<Scheduler> scheduler;
};

Optimization build_optimization(const Job& job, int64_t total_steps, int64_t steps_per_epoch) {
  Optimization o;
  o.optimizer = build_optimizer(job);
  o.scheduler = build_scheduler(job, *o.optimizer, total_steps, steps_per_epoch);
  return o;
}

// The optimizer step that closes k micro-batches: gradients unscaled (fp16), clipped to
// max_grad_norm (> 0) or, when `want_norm`, measured; returns their norm before clipping (0
// when neither). GradScaler: an fp16 overflow skips the step, and (as Accelerate) the
// scheduler's with it.
double optimizer_step(Optimization& opt, LossScaler& scaler, const std::vector<at::Tensor>& trainable,
                      double max_grad_norm, bool want_norm) {
  scaler.unscale(trainable);  // clipping and grad_norm see true gradients
  double grad_norm = 0;
  if (max_grad_norm > 0) grad_norm = torch::nn::utils::clip_grad_norm_(trainable, max_grad_norm);
  else if (want_norm) grad_norm = global_grad_norm(trainable);
  if (!scaler.step_skipped()) {
    opt.optimizer->step();
    opt.scheduler->step();
  }
  scaler.update();
  opt.optimizer->zero_grad();
  return grad_norm;
}

// What the ranks agree on before each optimizer step: a rank whose loss was not finite since
// the last step (the step is not taken; every rank stops, naming it) and a stop signal on any
// rank (every rank stops after this same step). One small allreduce per step.
struct StepAgreement {
  int64_t nonfinite_rank = -1;  // lowest such rank, -1 if none
  double nonfinite_value = 0;   // its loss (nan, inf or -inf)
  int stop_signal = 0;          // SIGINT if any rank was interrupted, else SIGUSR1 if pre-empted, else 0
};

StepAgreement agree_on_step(const Accelerator& acc, const at::Tensor& nonfinite_loss, int signal) {
  const int64_t world = acc.world_size();
  // [interrupted, pre-empted, then per rank its nan/inf loss or 0], built on the device; each
  // rank's slot is 0 on every other rank, so the sum carries the value itself.
  at::Tensor mine = at::zeros({2 + world}, nonfinite_loss.options());
  mine[0] = double(signal && signal != SIGUSR1);
  mine[1] = double(signal == SIGUSR1);
  mine[2 + acc.rank()] = nonfinite_loss;
  // The one host read of the step (a collective anyway when distributed).
  at::Tensor all = acc.world().distributed() ? acc.reduce_sum(mine) : mine.cpu();
  auto a = all.accessor<double, 1>();
  StepAgreement out;
  out.stop_signal = a[0] > 0 ? SIGINT : a[1] > 0 ? SIGUSR1 : 0;
  for (int64_t r = 0; r < world && out.nonfinite_rank < 0; ++r)
    if (!std::isfinite(a[2 + r])) out.nonfinite_rank = r, out.nonfinite_value = a[2 + r];
  return out;
}

std::string loss_text(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

}  // namespace

AcceleratorOptions accelerator_options(const Job& job) {
  AcceleratorOptions o;
  o.backend = job.config.world.backend;
  o.device = job.device;
  o.timeout = std::chrono::milliseconds(int64_t(job.config.world.timeout_s * 1000));
  return o;
}

EvalResult evaluate(Classifier& model, DataLoader& loader, const Loss& loss, const Job& job, const Accelerator& acc,
                    bool keep_predictions) {
  auto start = Clock::now();
  torch::NoGradGuard no_grad;
  model.eval();
  // Sums, not means, so ranks with shards of different sizes combine exactly; kept on the device
  // (loss x n, correct, top-5, n) so a batch costs no wait for the device.
  at::Tensor sums = at::zeros({4}, at::TensorOptions().dtype(at::kDouble).device(acc.device()));
  EvalResult r;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    at::Tensor x = batch->inputs.to(acc.device()), y = batch->targets.to(acc.device());
    at::Tensor out;
    {
      Autocast autocast(job.precision, acc.device());
      out = model.forward(x);
    }
    out = out.to(at::kFloat);
    double n = double(y.size(0));
    int64_t k = std::min<int64_t>(5, out.size(1));
    at::Tensor ranked = std::get<1>(out.topk(k, 1));
    sums += at::stack({loss(out, y, model.outputs_log_probs()).to(at::kDouble) * n,
                       out.argmax(1).eq(y).sum().to(at::kDouble), ranked.eq(y.unsqueeze(1)).any(1).sum().to(at::kDouble),
                       at::scalar_tensor(n, sums.options())});
    if (keep_predictions) {
      at::Tensor yc = y.cpu().contiguous(), rc = ranked.cpu().contiguous();
      const int64_t* t = yc.data_ptr<int64_t>();
      const int64_t* top = rc.data_ptr<int64_t>();
      r.targets.insert(r.targets.end(), t, t + yc.size(0));
      for (int64_t i = 0; i < yc.size(0); ++i) r.ranked.emplace_back(top + i * k, top + (i + 1) * k);
    }
  }
  at::Tensor totals = acc.reduce_sum(sums);
  auto t = totals.accessor<double, 1>();
  double runtime = seconds_since(start);
  r.examples = int64_t(t[3]);
  r.metrics["eval_loss"] = t[3] > 0 ? t[0] / t[3] : NAN;
  r.metrics["eval_accuracy"] = t[3] > 0 ? t[1] / t[3] : NAN;
  r.metrics["eval_top5"] = t[3] > 0 ? t[2] / t[3] : NAN;
  r.metrics["eval_runtime"] = runtime;
  r.metrics["eval_samples_per_second"] = t[3] / runtime;
  return r;
}

EvalResult train(Job& job, const WorldInfo& world) {
  const TrainConfig& tcfg = job.config.train;
  at::set_num_threads(int(job.threads));
  Accelerator acc(world, accelerator_options(job));
  const bool main_process = acc.is_main_process();
  StopSignal stop_signal;
  const fs::path dir = prepare_run_folder(job, acc);
  Checkpoints checkpoints(job.config.output, acc);
  const CheckpointOptions& copts = checkpoints.options();
  // Rank 0's choice for every rank (resuming across nodes needs output.dir on a shared file
  // system, as the Trainer's does).
  std::optional<std::string> resume_from = checkpoints.resume_point();

  auto ddp = acc.prepare(job.model);
  DataLoader train_loader(job.data.train, job.train_transforms, acc.prepare(loader_options(job, true), true));
  DataLoader eval_loader(job.data.eval, job.eval_transforms, acc.prepare(loader_options(job, false), false));
  const int64_t epochs = tcfg.epochs;
  const int64_t accum = tcfg.grad_accum_steps;
  const double max_grad_norm = tcfg.max_grad_norm;
  // The same count `trainrun check` and the preflight print (the loader's shard agrees with it).
  const RunLength length = run_length(job, acc.world_size());
  const int64_t batches_per_epoch = length.batches_per_epoch;
  const int64_t steps_per_epoch = length.steps_per_epoch;
  const int64_t total_steps = length.total_steps;
  if (train_loader.batches_per_epoch() != batches_per_epoch)
    throw TrainingError("internal: the loader has " + std::to_string(train_loader.batches_per_epoch()) +
                        " batches per epoch, the run length says " + std::to_string(batches_per_epoch));
  const int64_t batch = job.config.data.batch_size;
  Optimization opt = build_optimization(job, total_steps, steps_per_epoch);
  const int64_t log_every = tcfg.log_every_steps;
  const std::string& eval_every = tcfg.eval_every;
  const int64_t eval_steps = tcfg.eval_steps;
  // Dropout and other in-model randomness: the same seed on every rank, as a PyTorch script
  // that calls torch.manual_seed(seed) before training.
  torch::manual_seed(job.config.seed);
  LossScaler scaler(job.precision == "fp16");
  const bool bn_eval = tcfg.bn_eval;
  std::vector<at::Tensor> trainable;
  for (auto& [_, p] : job.trainable()) trainable.push_back(p);
  TrainingParts parts{ddp->module(), *opt.optimizer, *opt.scheduler, scaler};

  // Gradual unfreezing (freeze[].from_epoch, train.unfreeze_at_epoch): parameters that start
  // training at an epoch join the running optimizer as torch's add_param_group does, and DDP's
  // reducer is rebuilt over the new set of trainable parameters.
  auto unfreeze = [&](int64_t epoch, bool resuming) {
    if (!freeze_changes_at(job, epoch)) return;
    NamedParameters added = apply_freeze_schedule(job, epoch);
    if (added.empty()) return;
    add_param_groups(job, *opt.optimizer, added);
    opt.scheduler->set_steps_done(opt.scheduler->steps_done());  // the new groups' lr for this step
    trainable.clear();
    for (auto& [_, p] : job.trainable()) trainable.push_back(p);
    ddp.reset();  // the old reducer's autograd hooks go before the new reducer's come
    ddp = acc.prepare(job.model);
    if (!resuming)
      spdlog::info("  Epoch {}: unfreezing {} parameter tensors ({} of {} parameters now train)", epoch, added.size(),
                   thousands(job.trainable_parameters()), thousands(job.total_parameters()));
  };

  TrainerState state;
  LoopSums sums;
  if (resume_from) {
    // The optimizer needs the parameter groups it had when saved before its state loads.
    const int64_t saved_epoch = read_trainer_state(*resume_from).epoch_index;
    for (int64_t e = 1; e <= saved_epoch; ++e) unfreeze(e, /*resuming=*/true);
    state = checkpoints.load(*resume_from, parts, sums);
  }
  DeviceLossSums device_sums(sums, acc.device());
  state.max_steps = total_steps;
  state.num_train_epochs = epochs;
  state.logging_steps = log_every;
  state.eval_steps = eval_steps;
  state.save_steps = copts.save_steps();
  state.train_batch_size = batch;
  std::optional<RunLog> log;
  if (main_process) log.emplace(dir.string(), state.log_history, resume_from ? state.global_step : -1);

  log_banner(job, world, acc, {epochs, batch, accum, total_steps});
  int64_t step = state.global_step;
  int64_t first_epoch = state.epoch_index, skip = state.batches_in_epoch;
  if (skip >= batches_per_epoch) ++first_epoch, skip = 0;
  if (resume_from) log_resume(*resume_from, first_epoch, step, skip);

  Progress progress(total_steps, step, main_process);
  std::optional<nlohmann::json> unsaved_eval;  // the evaluation the next checkpoint is judged by
  auto run_eval = [&](int64_t at_step, double epoch) {
    EvalResult r = evaluate(ddp->module(), eval_loader, *job.loss, job, acc);
    std::vector<std::pair<std::string, double>> shown;
    nlohmann::ordered_json line = eval_line(r, tcfg.metrics, at_step, epoch, &shown);
    progress.clear();
    spdlog::info("{}", python_dict(shown));
    if (log) log->write(line);
    unsaved_eval = line;
    ddp->module().train();
    if (bn_eval) freeze_batchnorm_statistics(ddp->module());
    return r;
  };

  int64_t last_saved = resume_from ? step : -1;
  auto save = [&](int64_t epoch, int64_t micro) {
    if (!copts.enabled() || last_saved == step) return;
    state.global_step = step;
    state.epoch = double(epoch) + double(micro) / double(batches_per_epoch);
    state.epoch_index = epoch;
    state.batches_in_epoch = micro;
    if (log) state.log_history = log->history();
    auto began = Clock::now();
    std::string folder = checkpoints.save(parts, state, device_sums.read(), unsaved_eval);
    unsaved_eval.reset();
    last_saved = step;
    progress.clear();
    if (main_process) spdlog::info("Saving model checkpoint to {} ({:.2f} s)", folder, seconds_since(began));
  };
  // Set when the ranks agreed to stop after the current step (agree_on_step).
  int stop_after_step = 0;
  auto interrupt = [&](int64_t epoch, int64_t micro) {
    save(epoch, micro);
    // Every rank exits only once rank 0 has written the checkpoint: launchers that end a job at
    // its first non-zero exit (mpirun, torchrun, srun --kill-on-bad-exit) would cut the save.
    acc.wait_for_everyone();
    progress.close();
    throw TrainingInterrupted("interrupted (" + std::string(strsignal(stop_after_step)) + ") at step " +
                                  std::to_string(step) + (copts.enabled() ? "; checkpoint saved" : ""),
                              exit_code_for_stop(stop_after_step));
  };
  const int64_t save_steps = copts.save_steps();

  // EvalResult of the last evaluation; true when the loop's last step was evaluated.
  EvalResult last_eval;
  bool evaluated_at_end = false;
  for (auto& l : state.log_history)
    if (l.contains("eval_loss") && l.value("step", int64_t(-1)) == step) evaluated_at_end = true;
  auto start = Clock::now();
  LogWindow window;
  int64_t session_examples = 0;
  const int64_t first_step = step;
  opt.optimizer->zero_grad();
  for (int64_t epoch = first_epoch; epoch < epochs; ++epoch) {
    unfreeze(epoch, /*resuming=*/false);
    ddp->module().train();
    if (bn_eval) freeze_batchnorm_statistics(ddp->module());
    int64_t micro = epoch == first_epoch ? skip : 0;
    train_loader.start_epoch(epoch, micro);
    for (;;) {
      auto wait_start = Clock::now();
      auto b = train_loader.next();
      window.data_wait += seconds_since(wait_start);
      if (!b) break;
      // Accumulation micro-steps skip DDP's gradient sync (no_sync); the last batch of an
      // epoch closes a partial group, as the Trainer does.
      bool closes_step = ++micro % accum == 0 || micro == batches_per_epoch;
      ddp->set_gradient_sync(closes_step);
      at::Tensor x = b->inputs.to(acc.device()), y = b->targets.to(acc.device());
      at::Tensor out;
      {
        Autocast autocast(job.precision, acc.device());
        out = ddp->forward(x);
      }
      at::Tensor loss = (*job.loss)(out.to(at::kFloat), y, ddp->module().outputs_log_probs());
      acc.backward(scaler.scale(accum > 1 ? loss / double(accum) : loss));  // mean over the k micro-batches
      window.examples += y.size(0), session_examples += y.size(0);
      device_sums.add(loss, /*stop_on_nonfinite=*/!scaler.enabled());
      if (!closes_step) continue;
      StepAgreement agreed =
          agree_on_step(acc, device_sums.take_nonfinite(), stop_signal.raised(step + 1, main_process));
      if (agreed.nonfinite_rank >= 0)
        throw WorldFailure("step " + std::to_string(step + 1) + ": loss is " + loss_text(agreed.nonfinite_value) +
                           " on rank " + std::to_string(agreed.nonfinite_rank) +
                           "; every rank stopped before the optimizer step (lower the learning rate or check the "
                           "data); checkpoints saved before it are kept");
      stop_after_step = agreed.stop_signal;
      bool logging = (step + 1) % log_every == 0;
      double grad_norm = optimizer_step(opt, scaler, trainable, max_grad_norm, logging);
      ++step, ++window.steps;
      evaluated_at_end = false;
      progress.update(step);
      double epoch_f = double(step) / double(steps_per_epoch);
      if (logging) {
        progress.clear();
        log_training(acc, log ? &*log : nullptr, grad_norm, current_lr(*opt.optimizer), epoch_f, step,
                     seconds_since(start), device_sums, window);
      }
      if (eval_steps > 0 && step % eval_steps == 0) {
        last_eval = run_eval(step, epoch_f);
        evaluated_at_end = true;
      }
      // The step that ends an epoch is saved (and stopped at) after the epoch's evaluation.
      if (micro == batches_per_epoch) continue;
      if (save_steps > 0 && step % save_steps == 0) save(epoch, micro);
      if (stop_after_step) interrupt(epoch, micro);
    }
    if (eval_every == "epoch") {
      last_eval = run_eval(step, double(epoch + 1));
      evaluated_at_end = true;
    }
    if (copts.save_every == "epoch" || (save_steps > 0 && step % save_steps == 0)) save(epoch, batches_per_epoch);
    if (stop_after_step) interrupt(epoch, batches_per_epoch);
  }
  if (!evaluated_at_end && eval_every != "never") last_eval = run_eval(step, double(epochs));
  save(epochs - 1, batches_per_epoch);
  progress.close();

  double runtime = seconds_since(start);
  double samples = acc.reduce_sum(at::scalar_tensor(double(session_examples), at::kDouble)).item<double>();
  // The mean loss over every micro-batch of the run (resumed ones too), then over ranks.
  device_sums.read();
  double train_loss = acc.mean(sums.loss_total / double(std::max<int64_t>(sums.batches_total, 1)));
  acc.wait_for_everyone();
  if (!main_process) return last_eval;
  save_safetensors((dir / "model.safetensors").string(), state_dict(ddp->module()));
  spdlog::info("\n\nTraining completed.\n");
  spdlog::info("{}", python_dict({{"train_runtime", std::round(runtime * 1e4) / 1e4},
                                  {"train_samples_per_second", std::round(samples / runtime * 1e3) / 1e3},
                                  {"train_steps_per_second", std::round(double(step - first_step) / runtime * 1e3) / 1e3},
                                  {"train_loss", train_loss},
                                  {"epoch", double(epochs)}}));
  log->write({{"train_runtime", runtime},
              {"train_samples_per_second", samples / runtime},
              {"train_steps_per_second", double(step - first_step) / runtime},
              {"train_loss", train_loss},
              {"epoch", double(epochs)},
              {"step", step}});
  spdlog::info("Saved {}", (dir / "model.safetensors").string());
  return last_eval;
}

}  // namespace trainrun
