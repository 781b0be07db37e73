// c10d's process group and DDP Reducer, built as torch.distributed builds them in each LibTorch
// release; the release differences are named in runner/distributed/torch_compat.h.
#include "runner/distributed/process_group.h"

#include "runner/distributed/torch_compat.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <initializer_list>
#include <stdexcept>
#include <type_traits>
#include <utility>

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
                                               int64_t>) {
    // As 2.7: per_bucket_size_limits gone (the Reducer computes the limits), no new flags yet.
    // Found by scripts/check-libtorch.sh against 2.7.1's headers (2026-11-27).
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap);
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

bool has_nccl() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

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
