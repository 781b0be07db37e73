// A small public API in the spirit of Hugging Face Accelerate, on c10d: the trainer uses it, and
// a hand-written loop can too (examples/custom_loop/).
//
//   auto acc = trainrun::Accelerator::from_env();          // RANK/WORLD_SIZE/... or one process
//   auto ddp = acc.prepare(model);                         // broadcast rank 0's state, DDP hooks
//   auto opts = acc.prepare(loader_options, /*train=*/true);  // DistributedSampler shard
//   ... at::Tensor loss = F(ddp->forward(x), y); acc.backward(loss); optimizer.step();
//   at::Tensor all_preds = acc.gather_for_metrics(preds);  // every example exactly once
#pragma once

#include "components/data/loader/loader.h"
#include "components/models/model.h"
#include "runner/distributed/world_config.h"
#include "runner/distributed/world_info.h"

#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>

namespace c10d {
class ProcessGroup;
class Reducer;
}  // namespace c10d

namespace trainrun {

struct AcceleratorOptions {
  WorldConfig world = WorldConfig::defaults();  // the recipe's world: section (backend, timeout_s)
  std::string device = "auto";   // cpu | cuda | auto; the trainer passes the one its job resolved
  int64_t bucket_cap_mb = 25;    // DDP's bucket_cap_mb
  bool broadcast_buffers = true;
};

// DistributedDataParallel for one module, on c10d's own Reducer: gradients are averaged in
// buckets launched from autograd hooks as backward produces them; buffers follow rank 0.
class DistributedModel {
 public:
  DistributedModel(std::shared_ptr<Classifier> module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                   const AcceleratorOptions& options);
  ~DistributedModel();
  at::Tensor forward(const at::Tensor& x);
  // DDP's no_sync(): false for gradient-accumulation micro-steps.
  void set_gradient_sync(bool on) { sync_ = on; }
  Classifier& module() { return *module_; }
  std::shared_ptr<Classifier> module_ptr() { return module_; }

 private:
  std::shared_ptr<Classifier> module_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::unique_ptr<c10d::Reducer> reducer_;
  std::vector<at::Tensor> buffers_;
  bool broadcast_buffers_;
  bool sync_ = true;
  bool synced_last_forward_ = true;  // DDP's require_forward_param_sync
};

class Accelerator {
 public:
  Accelerator(WorldInfo world, AcceleratorOptions options);
  static Accelerator from_env(AcceleratorOptions options = {});
  ~Accelerator();
  Accelerator(Accelerator&&) noexcept;

  const WorldInfo& world() const { return world_; }
  int64_t rank() const { return world_.rank; }
  int64_t world_size() const { return world_.world_size; }
  bool is_main_process() const { return world_.rank == 0; }
  c10::Device device() const { return device_; }
  const std::string& backend() const { return backend_; }
  // Where the ranks met, e.g. "TCPStore 127.0.0.1:29500 (libuv server)"; empty for one process.
  const std::string& rendezvous() const { return rendezvous_; }

  // Moves the model to the device, broadcasts rank 0's parameters and buffers, and (when
  // distributed) registers DDP's gradient hooks over the trainable parameters.
  std::shared_ptr<DistributedModel> prepare(std::shared_ptr<Classifier> model);
  // This rank's shard: DistributedSampler's (padded) for training, every example once for eval.
  LoaderOptions prepare(LoaderOptions options, bool train) const;

  void backward(const at::Tensor& loss) const;
  // Concatenation over ranks along dim 0, in rank order (unequal lengths allowed).
  at::Tensor gather_for_metrics(const at::Tensor& t) const;
  // Sum over ranks (float64 on the host).
  at::Tensor reduce_sum(const at::Tensor& t) const;
  double mean(double value) const;
  void wait_for_everyone() const;
  // Prints a line on the main process only (Accelerate's accelerator.print).
  void print(const std::string& line) const;

 private:
  WorldInfo world_;
  AcceleratorOptions options_;
  c10::Device device_{c10::kCPU};
  std::string backend_ = "none";
  std::string rendezvous_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

}  // namespace trainrun
