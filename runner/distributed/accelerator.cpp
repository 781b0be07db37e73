// The Accelerator (accelerator.h): this rank's device, joining the world, and preparing a model
// and a loader for it. The collectives are in collectives.cpp, DDP in distributed_model.cpp.
#include "runner/distributed/accelerator.h"

#include "runner/distributed/rendezvous.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/torch.h>

#include <iostream>
#include <stdexcept>

namespace trainrun {

Accelerator::Accelerator(WorldInfo world, AcceleratorOptions options) : world_(std::move(world)), options_(options) {
  bool cuda = torch::cuda::is_available();
  if (options_.device == "cuda" && !cuda) throw std::invalid_argument("world.device: cuda was asked for but no CUDA device is available");
  bool use_cuda = options_.device == "cuda" || (options_.device == "auto" && cuda);
  const std::string backend = options_.world.backend == "auto" ? (use_cuda ? "nccl" : "gloo") : options_.world.backend;
  if (use_cuda) {
    // torch.cuda.set_device(LOCAL_RANK) before the process group exists, so NCCL (and every
    // allocation without an explicit index) uses this rank's GPU instead of guessing cuda:0.
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    const int64_t devices = guard.deviceCount();
    int64_t index = world_.local_rank;
    // Over gloo, more ranks than GPUs share them (set_device(local_rank % device_count()), as
    // scripts do); NCCL refuses two ranks on one GPU ("Duplicate GPU detected"), so it stays an error.
    if (index >= devices && backend == "gloo" && devices > 0) index %= devices;
    if (index >= devices)
      throw std::invalid_argument("world.device: local rank " + std::to_string(world_.local_rank) + " needs cuda:" +
                                  std::to_string(world_.local_rank) + " but this node has " + std::to_string(devices) +
                                  " CUDA device(s) (over world.backend: gloo, ranks may share one)");
    device_ = c10::Device(c10::kCUDA, c10::DeviceIndex(index));
    guard.setDevice(device_);
  }
  if (!world_.distributed()) return;

  backend_ = backend;
  JoinedWorld joined = join_world(world_, backend_, options_.world.timeout());
  rendezvous_ = joined.rendezvous;
  group_ = joined.group;
}

Accelerator::~Accelerator() = default;
Accelerator::Accelerator(Accelerator&&) noexcept = default;

Accelerator Accelerator::from_env(AcceleratorOptions options) {
  return Accelerator(WorldInfo::from_env().value_or(WorldInfo{}), options);
}

std::shared_ptr<DistributedModel> Accelerator::prepare(std::shared_ptr<Classifier> model) {
  model->to(device_);
  if (group_) {
    // DDP's _sync_module_states: every rank starts from rank 0's parameters and buffers.
    std::vector<at::Tensor> state;
    for (auto& p : model->parameters()) state.push_back(p.detach());
    for (auto& b : model->buffers()) state.push_back(b);
    torch::NoGradGuard no_grad;
    c10d::broadcast_coalesced(group_, state, 250 * 1024 * 1024, 0);
  }
  return std::make_shared<DistributedModel>(std::move(model), group_, options_);
}

LoaderOptions Accelerator::prepare(LoaderOptions options, bool train) const {
  options.shard.rank = world_.rank;
  options.shard.world_size = world_.world_size;
  options.shard.pad = train;
  options.shard.shuffle = train;
  return options;
}

void Accelerator::backward(const at::Tensor& loss) const { loss.backward(); }

void Accelerator::print(const std::string& line) const {
  if (is_main_process()) std::cout << line << std::endl;
}

}  // namespace trainrun
