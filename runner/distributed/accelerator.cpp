#include "runner/distributed/accelerator.h"

#include "runner/distributed/process_group.h"
#include "runner/distributed/store.h"
#include "support/errors.h"

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <limits>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace trainrun {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::optional<std::string>(v) : std::nullopt;
}

// A launcher's number, e.g. RANK. A bad one is a bad input (exit 2, nothing started), named with
// its variable. `leading`: only the leading number counts (SLURM_TASKS_PER_NODE is "2(x3)").
int64_t env_int(const char* name, int64_t fallback, bool leading = false) {
  auto v = env(name);
  if (!v) return fallback;
  int64_t x = 0;
  const char *begin = v->data(), *end = begin + v->size();
  auto [ptr, ec] = std::from_chars(begin, end, x);
  if (ec != std::errc() || x < 0 || (!leading && ptr != end))
    throw RecipeError(std::string(name) + "=" + *v + ": expected a whole number >= 0 (set by the launcher that "
                      "started trainrun, or by hand)");
  if (x > std::numeric_limits<int32_t>::max())  // ranks and sizes c10d keeps in an int
    throw RecipeError(std::string(name) + "=" + *v + ": too large (at most " +
                      std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  return x;
}

// First host of a SLURM node list: "node[003-005,7],gpu1" -> "node003".
std::string first_slurm_host(const std::string& list) {
  auto bracket = list.find('['), comma = list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket))
    return list.substr(0, comma);
  std::string prefix = list.substr(0, bracket);
  std::string first = list.substr(bracket + 1, list.find_first_of("-,]", bracket) - bracket - 1);
  return prefix + first;
}

// The local address this host uses to reach `host` (what gloo should bind to): connecting a UDP
// socket sends nothing but makes the kernel pick the route. Falls back to the hostname.
std::string local_address_towards(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  std::string found;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) == 0 && res) {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {0};
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      found = text;
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(res);
  }
  if (!found.empty()) return found;
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// DDP's defaults: the first bucket is small so communication starts early.
constexpr size_t kFirstBucketBytes = 1024 * 1024;

}  // namespace

std::optional<WorldInfo> WorldInfo::from_env() {
  WorldInfo w;
  // The variables this launcher set, for messages: rank, world size, local rank, local world size, node rank.
  std::array<const char*, 5> names = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"};
  if (env("RANK") && env("WORLD_SIZE")) {
    w.launcher = env("TRAINRUN_LAUNCHER").value_or("torchrun");
    w.rank = env_int("RANK", 0);
    w.world_size = env_int("WORLD_SIZE", 1);
    w.local_rank = env_int("LOCAL_RANK", 0);
    w.local_world_size = env_int("LOCAL_WORLD_SIZE", 1);
    w.node_rank = env_int("GROUP_RANK", w.rank / std::max<int64_t>(1, w.local_world_size));
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS") && env("SLURM_STEP_ID")) {
    // srun's tasks (a job step). An sbatch script's own shell carries SLURM_PROCID=0 and the
    // job's SLURM_NTASKS too, but is no task: there trainrun launches its own world.
    w.launcher = "slurm";
    names = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_NODEID"};
    w.rank = env_int("SLURM_PROCID", 0);
    w.world_size = env_int("SLURM_NTASKS", 1);
    w.local_rank = env_int("SLURM_LOCALID", 0);
    w.local_world_size = env_int("SLURM_NTASKS_PER_NODE", env_int("SLURM_TASKS_PER_NODE", 1, true));
    w.node_rank = env_int("SLURM_NODEID", 0);
    if (auto nodes = env("SLURM_NODELIST")) w.master_addr = first_slurm_host(*nodes);
  } else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    w.launcher = "mpi";
    names = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK"};  // the node follows from the rank
    w.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    w.world_size = env_int("OMPI_COMM_WORLD_SIZE", 1);
    w.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    w.local_world_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    // OMPI_COMM_WORLD_NODE_RANK is not the node's index but the process's rank among all jobs'
    // processes on its node (1 for the second of `mpirun -np 2` on one machine). Open MPI's
    // default by-slot mapping fills node after node, so the index follows from the ranks.
    w.node_rank = w.rank / std::max<int64_t>(1, w.local_world_size);
  } else {
    return std::nullopt;
  }
  if (auto a = env("MASTER_ADDR")) w.master_addr = *a;
  w.master_port = env_int("MASTER_PORT", w.master_port);
  if (auto m = env("TRAINRUN_INIT_METHOD")) w.init_method = *m;
  w.nnodes = env_int("NNODES", (w.world_size + w.local_world_size - 1) / std::max<int64_t>(1, w.local_world_size));
  if (w.master_port > 65535)
    throw RecipeError("MASTER_PORT=" + std::to_string(w.master_port) + ": not a port number (0 to 65535)");
  auto outside = [&](const std::string& what, int64_t index, const std::string& count, const char* index_name,
                     const char* count_name) {
    return RecipeError(what + " " + std::to_string(index) + " is outside " + count + " (check " + index_name + " / " +
                       count_name + ")");
  };
  if (w.rank >= w.world_size)
    throw outside("rank", w.rank, "a world of " + std::to_string(w.world_size), names[0], names[1]);
  if (w.nnodes < 1) throw RecipeError("NNODES=0: expected at least 1 node");
  // SLURM's tasks per node are uneven in some allocations ("4,1,1"), so its first node's count
  // bounds neither the local rank nor the node id; torchrun's and Open MPI's are exact.
  if (w.launcher != "slurm") {
    if (w.local_world_size < 1) throw RecipeError(std::string(names[3]) + "=0: expected at least 1 process on this node");
    if (w.local_rank >= w.local_world_size)
      throw outside("local rank", w.local_rank, "this node's " + std::to_string(w.local_world_size) + " process(es)",
                    names[2], names[3]);
    if (w.node_rank >= w.nnodes)
      throw outside("node", w.node_rank, "the world's " + std::to_string(w.nnodes) + " node(s)", names[4], "NNODES");
  }
  return w;
}

DistributedModel::DistributedModel(std::shared_ptr<Classifier> module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                                   const AcceleratorOptions& options)
    : module_(std::move(module)), group_(std::move(group)), broadcast_buffers_(options.broadcast_buffers) {
  if (!group_) return;
  std::vector<at::Tensor> params;
  std::unordered_map<size_t, std::string> names;
  for (auto& p : module_->named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen parameters take no part, as in DDP
    names[params.size()] = p.key();
    params.push_back(p.value());
  }
  for (auto& b : module_->buffers()) buffers_.push_back(b);
  std::vector<bool> sparse(params.size(), false);
  size_t cap = size_t(options.bucket_cap_mb) * 1024 * 1024;
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(params, {kFirstBucketBytes, cap}, sparse);
  // As torch.nn.parallel.DistributedDataParallel: buckets in reverse, since backward produces
  // the last layers' gradients first.
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  reducer_ = make_reducer(params, buckets, limits, group_, sparse, int64_t(cap),
                          /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false, names,
                          int64_t(kFirstBucketBytes));
}

DistributedModel::~DistributedModel() = default;

at::Tensor DistributedModel::forward(const at::Tensor& x) {
  if (!reducer_) return module_->forward(x);
  bool grad = at::GradMode::is_enabled();
  if (grad && sync_) reducer_->prepare_for_forward();
  if (grad) reducer_->rebuild_buckets();
  if (broadcast_buffers_ && synced_last_forward_ && !buffers_.empty())
    c10d::broadcast_coalesced(group_, buffers_, 250 * 1024 * 1024, 0);
  at::Tensor out = module_->forward(x);
  if (grad && sync_) {
    synced_last_forward_ = true;
    reducer_->prepare_for_backward({});
  } else {
    synced_last_forward_ = false;
  }
  return out;
}

Accelerator::Accelerator(WorldInfo world, AcceleratorOptions options) : world_(std::move(world)), options_(options) {
  bool cuda = torch::cuda::is_available();
  if (options_.device == "cuda" && !cuda) throw std::invalid_argument("world.device: cuda was asked for but no CUDA device is available");
  bool use_cuda = options_.device == "cuda" || (options_.device == "auto" && cuda);
  device_ = use_cuda ? c10::Device(c10::kCUDA, c10::DeviceIndex(world_.local_rank)) : c10::Device(c10::kCPU);
  if (use_cuda) {
    // torch.cuda.set_device(LOCAL_RANK) before the process group exists, so NCCL (and every
    // allocation without an explicit index) uses this rank's GPU instead of guessing cuda:0.
    c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    if (world_.local_rank >= cuda.deviceCount())
      throw std::invalid_argument("world.device: local rank " + std::to_string(world_.local_rank) + " needs cuda:" +
                                  std::to_string(world_.local_rank) + " but this node has " +
                                  std::to_string(cuda.deviceCount()) + " CUDA device(s)");
    cuda.setDevice(device_);
  }
  if (!world_.distributed()) return;

  backend_ = options_.backend == "auto" ? (use_cuda ? "nccl" : "gloo") : options_.backend;
  auto store = make_rendezvous_store(world_, options_.timeout);
  rendezvous_ = store.description;
  GlooDevice gloo;
  if (backend_ != "nccl") {
    if (auto ifname = env("GLOO_SOCKET_IFNAME"))
      gloo.interface = *ifname;
    else if (world_.master_addr == "127.0.0.1" || world_.master_addr == "localhost")
      gloo.hostname = "127.0.0.1";
    else
      gloo.hostname = local_address_towards(world_.master_addr);
  }
  group_ = make_process_group(store.store, int(world_.rank), int(world_.world_size), backend_, options_.timeout, gloo);
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

at::Tensor Accelerator::reduce_sum(const at::Tensor& t) const {
  at::Tensor x = t.detach().to(device_, at::kDouble).clone();
  if (group_) {
    std::vector<at::Tensor> v{x};
    group_->allreduce(v)->wait();
  }
  return x.cpu();
}

double Accelerator::mean(double value) const {
  return reduce_sum(at::scalar_tensor(value, at::kDouble)).item<double>() / double(world_.world_size);
}

at::Tensor Accelerator::gather_for_metrics(const at::Tensor& t) const {
  if (!group_) return t;
  // all_gather needs equal shapes: pad to the longest shard, then trim each to its length.
  at::Tensor len = at::full({1}, t.size(0), at::TensorOptions().dtype(at::kLong).device(device_));
  std::vector<at::Tensor> lens(size_t(world_.world_size));
  for (auto& l : lens) l = at::empty_like(len);
  std::vector<std::vector<at::Tensor>> out_lens{lens};
  std::vector<at::Tensor> in_len{len};
  group_->allgather(out_lens, in_len)->wait();
  int64_t longest = 0;
  for (auto& l : out_lens[0]) longest = std::max(longest, l.item<int64_t>());
  auto sizes = t.sizes().vec();
  sizes[0] = longest;
  at::Tensor padded = at::zeros(sizes, t.options().device(device_));
  padded.narrow(0, 0, t.size(0)).copy_(t);
  std::vector<std::vector<at::Tensor>> parts(1);
  for (int64_t r = 0; r < world_.world_size; ++r) parts[0].push_back(at::empty_like(padded));
  std::vector<at::Tensor> in{padded};
  group_->allgather(parts, in)->wait();
  std::vector<at::Tensor> trimmed;
  for (int64_t r = 0; r < world_.world_size; ++r)
    trimmed.push_back(parts[0][size_t(r)].narrow(0, 0, out_lens[0][size_t(r)].item<int64_t>()));
  return at::cat(trimmed).to(t.device());
}

void Accelerator::print(const std::string& line) const {
  if (is_main_process()) std::cout << line << std::endl;
}

void Accelerator::wait_for_everyone() const {
  if (group_) group_->barrier()->wait();
}

}  // namespace trainrun
