// Building c10d's process group and DDP Reducer across LibTorch releases: Debian's 1.13, Debian
// 13's 2.6 and the official 2.x archives / pip wheels differ in how a ProcessGroup is made (see the
// table in runner/distributed/torch_compat.h, which holds every LibTorch version guard of
// trainrun), so callers (rendezvous.cpp, distributed_model.cpp) have none.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace c10d {
class ProcessGroup;
class Reducer;
class Store;
}  // namespace c10d

namespace trainrun {

// Where gloo binds: a network interface by name (GLOO_SOCKET_IFNAME) when `interface` is set,
// otherwise a hostname or address (127.0.0.1, or the address that routes to the master).
struct GlooDevice {
  std::string interface;
  std::string hostname;
};

// Whether this LibTorch has c10d's NCCL backend (built with USE_C10D_NCCL: CUDA archives and
// wheels; never a CPU LibTorch).
bool has_nccl();

// A process group of `size` ranks over `store`: backend "nccl" (only in a LibTorch built with
// USE_C10D_NCCL; otherwise std::invalid_argument) or else gloo, on `gloo`'s device. On 2.x the gloo
// or NCCL backend is wrapped in a c10d::ProcessGroup the way torch.distributed's
// _new_process_group_helper does it in that release.
c10::intrusive_ptr<c10d::ProcessGroup> make_process_group(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                          const std::string& backend, std::chrono::milliseconds timeout,
                                                          const GlooDevice& gloo);

// c10d's DDP Reducer over `group`, with the bucket assignment from compute_bucket_assignment_by_size
// (`buckets`, `per_bucket_limits`) and the caps it was computed with, whichever constructor this
// LibTorch has.
std::unique_ptr<c10d::Reducer> make_reducer(std::vector<at::Tensor> params, std::vector<std::vector<size_t>> buckets,
                                            std::vector<size_t> per_bucket_limits,
                                            c10::intrusive_ptr<c10d::ProcessGroup> group,
                                            std::vector<bool> expect_sparse_gradients, int64_t bucket_bytes_cap,
                                            bool find_unused_parameters, bool gradient_as_bucket_view,
                                            std::unordered_map<size_t, std::string> param_names,
                                            int64_t first_bucket_bytes_cap);

}  // namespace trainrun
