// Every LibTorch version guard of trainrun. What changed, release by release, in the two things
// trainrun builds itself (torch.distributed would build them in Python):
//
// release  | gloo / NCCL process group                                | c10d::Reducer constructor
// ---------+----------------------------------------------------------+------------------------------
// 1.13     | ProcessGroupGloo/NCCL derive from c10d::ProcessGroup:     | (params, buckets,
// (Debian) | the backend is the group.                                 |  per_bucket_size_limits, pg,
//          |                                                          |  sparse, cap, find_unused,
//          |                                                          |  as_view, names, first_cap)
// 2.0-2.5  | They derive from c10d::Backend. A c10d::ProcessGroup(     | same
//          | store, rank, size, ProcessGroup::Options(name, timeout))  |
//          | holds them: setBackend(DeviceType, BackendType, backend); |
//          | the default backend comes from Options::backend.          |
// 2.6-2.7  | ProcessGroup::Options is gone: ProcessGroup(store, rank,  | same (limits by const&)
//          | size), then setDefaultBackend(BackendType).               |
// 2.8      | same                                                     | no per_bucket_size_limits;
//          |                                                          |  + skip_all_reduce_unused_params,
//          |                                                          |  + use_python_reducer
// 2.14     | same (BackendType: XCCL=5, CUSTOM=6 since 2.6; gloo's     | + bucket_bytes_cap_list (empty:
// (newest) | createDeviceFor*(name, lazyInit = false))                 |  {first_cap, cap} as before),
//          |                                                          |  + batched_grad_copy = false
//
// Read in PyTorch's own sources (c10d/ProcessGroup.hpp, Backend.hpp, ProcessGroupGloo.hpp,
// ProcessGroupNCCL.hpp, reducer.hpp, torch/distributed/distributed_c10d.py) of 2.2.2, 2.3.0, 2.6.0,
// 2.8.0 (reducer.hpp and distributed_c10d.py only) and 2.14.0; the 2.0/2.1 ProcessGroup API and
// _new_process_group_helper are those of 2.2. The Options removal is pytorch#132931 (relanded as
// #135653 on 2024-09-12, after the 2.5 branch cut of 2024-09-09); the 2.8 Reducer arguments are
// pytorch#151503 and #152735 (April-May 2025); bucket_bytes_cap_list is pytorch#169026
// (November 2025). The Reducer of 2.7 and of 2.9-2.13 was not read: from 2.7 on, the constructor
// is picked by its signature (the three known ones), and a fourth fails to compile with a message.
#include "runner/distributed/process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/version.h>

#include <initializer_list>
#include <stdexcept>
#include <type_traits>
#include <utility>

#if TORCH_VERSION_MAJOR >= 2
#define TRAINRUN_C10D_BACKEND 1  // gloo and NCCL are c10d::Backend, held by a c10d::ProcessGroup
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define TRAINRUN_C10D_PG_WITHOUT_OPTIONS 1  // ProcessGroup(store, rank, size) + setDefaultBackend
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
#define TRAINRUN_C10D_REDUCER_BY_SIGNATURE 1
#endif

namespace trainrun {

namespace {

#ifdef TRAINRUN_C10D_BACKEND
// _new_process_group_helper: a ProcessGroup over the store, the backend registered for each device
// type it serves (BackendConfig: gloo for cpu and cuda, nccl for cuda) and made the default.
c10::intrusive_ptr<c10d::ProcessGroup> hold(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                            c10::intrusive_ptr<c10d::Backend> backend,
                                            c10d::ProcessGroup::BackendType type, const std::string& name,
                                            std::chrono::milliseconds timeout,
                                            std::initializer_list<c10::DeviceType> devices) {
#ifdef TRAINRUN_C10D_PG_WITHOUT_OPTIONS
  (void)name;
  (void)timeout;
  auto group = c10::make_intrusive<c10d::ProcessGroup>(std::move(store), rank, size);
  group->setDefaultBackend(type);
#else
  auto options = c10::make_intrusive<c10d::ProcessGroup::Options>(name, timeout);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size, options);
#endif
  for (auto device : devices) group->setBackend(device, type, backend);
  return group;
}
#endif

c10::intrusive_ptr<c10d::ProcessGroup> make_gloo(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                 std::chrono::milliseconds timeout, const GlooDevice& device) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!device.interface.empty())
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(device.interface));
  else
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(device.hostname));
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  gloo->setSequenceNumberForGroup();  // as torch.distributed does for gloo and nccl
#ifdef TRAINRUN_C10D_BACKEND
  return hold(std::move(store), rank, size, gloo, c10d::ProcessGroup::BackendType::GLOO, "gloo", timeout,
              {c10::DeviceType::CPU, c10::DeviceType::CUDA});
#else
  return gloo;
#endif
}

#ifdef USE_C10D_NCCL
c10::intrusive_ptr<c10d::ProcessGroup> make_nccl(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                 std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  nccl->setSequenceNumberForGroup();
#ifdef TRAINRUN_C10D_BACKEND
  return hold(std::move(store), rank, size, nccl, c10d::ProcessGroup::BackendType::NCCL, "nccl", timeout,
              {c10::DeviceType::CUDA});
#else
  return nccl;
#endif
}
#endif

#ifdef TRAINRUN_C10D_REDUCER_BY_SIGNATURE
template <class>
inline constexpr bool kNoKnownReducer = false;

// R is c10d::Reducer, a template parameter only so that the branches this LibTorch lacks are
// never compiled.
template <class R>
std::unique_ptr<R> construct_reducer(std::vector<at::Tensor> params, std::vector<std::vector<size_t>> buckets,
                                     std::vector<size_t> limits, c10::intrusive_ptr<c10d::ProcessGroup> group,
                                     std::vector<bool> sparse, int64_t cap, bool find_unused, bool as_view,
                                     std::unordered_map<size_t, std::string> names, int64_t first_cap) {
  using Params = std::vector<at::Tensor>;
  using Buckets = std::vector<std::vector<size_t>>;
  using Limits = std::vector<size_t>;
  using Group = c10::intrusive_ptr<c10d::ProcessGroup>;
  using Sparse = std::vector<bool>;
  using Names = std::unordered_map<size_t, std::string>;
  if constexpr (std::is_constructible_v<R, Params, Buckets, Limits, Group, Sparse, int64_t, bool, bool, Names,
                                        int64_t>) {
    // As 1.13-2.6.
    return std::make_unique<R>(std::move(params), std::move(buckets), limits, std::move(group), std::move(sparse),
                               cap, find_unused, as_view, std::move(names), first_cap);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t, bool, bool>) {
    // As 2.8: the Reducer recomputes the limits; DDP's defaults for the two new flags.
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap,
                               /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t, bool, bool, std::vector<int64_t>>) {
    // As 2.14: an empty bucket_bytes_cap_list keeps {first_bucket_bytes_cap, bucket_bytes_cap}.
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap,
                               /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
                               /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
  } else {
    static_assert(kNoKnownReducer<R>,
                  "this LibTorch's c10d::Reducer constructor is none trainrun knows: add it to "
                  "runner/distributed/process_group.cpp (see torch/csrc/distributed/c10d/reducer.hpp)");
  }
}
#endif

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> make_process_group(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                          const std::string& backend, std::chrono::milliseconds timeout,
                                                          const GlooDevice& gloo) {
  if (backend == "nccl") {
#ifdef USE_C10D_NCCL
    return make_nccl(std::move(store), rank, size, timeout);
#else
    throw std::invalid_argument("world.backend: nccl needs a CUDA build of LibTorch; this one is CPU-only (use gloo)");
#endif
  }
  return make_gloo(std::move(store), rank, size, timeout, gloo);
}

std::unique_ptr<c10d::Reducer> make_reducer(std::vector<at::Tensor> params, std::vector<std::vector<size_t>> buckets,
                                            std::vector<size_t> per_bucket_limits,
                                            c10::intrusive_ptr<c10d::ProcessGroup> group,
                                            std::vector<bool> expect_sparse_gradients, int64_t bucket_bytes_cap,
                                            bool find_unused_parameters, bool gradient_as_bucket_view,
                                            std::unordered_map<size_t, std::string> param_names,
                                            int64_t first_bucket_bytes_cap) {
#ifdef TRAINRUN_C10D_REDUCER_BY_SIGNATURE
  return construct_reducer<c10d::Reducer>(std::move(params), std::move(buckets), std::move(per_bucket_limits),
                                          std::move(group), std::move(expect_sparse_gradients), bucket_bytes_cap,
                                          find_unused_parameters, gradient_as_bucket_view, std::move(param_names),
                                          first_bucket_bytes_cap);
#else
  return std::make_unique<c10d::Reducer>(std::move(params), std::move(buckets), std::move(per_bucket_limits),
                                         std::move(group), std::move(expect_sparse_gradients), bucket_bytes_cap,
                                         find_unused_parameters, gradient_as_bucket_view, std::move(param_names),
                                         first_bucket_bytes_cap);
#endif
}

}  // namespace trainrun
