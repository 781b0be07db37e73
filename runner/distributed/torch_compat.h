// Every LibTorch version guard of trainrun, in one place. What changed, release by release, in the
// c10d things trainrun builds itself (torch.distributed would build them in Python):
//
// release  | gloo / NCCL process group                                | c10d::Reducer constructor
// ---------+----------------------------------------------------------+------------------------------
// 1.13     | ProcessGroupGloo/NCCL derive from c10d::ProcessGroup:     | (params, buckets,
// (Debian  | the backend is the group.                                 |  per_bucket_size_limits, pg,
//  12)     |                                                          |  sparse, cap, find_unused,
//          |                                                          |  as_view, names, first_cap)
// 2.0-2.5  | They derive from c10d::Backend. A c10d::ProcessGroup(     | same
//          | store, rank, size, ProcessGroup::Options(name, timeout))  |
//          | holds them: setBackend(DeviceType, BackendType, backend); |
//          | the default backend comes from Options::backend.          |
// 2.6-2.7  | ProcessGroup::Options is gone: ProcessGroup(store, rank,  | 2.6: same (limits by const&)
// (2.6:    | size), then setDefaultBackend(BackendType).               | 2.7: no per_bucket_size_limits
//  Debian  |                                                          |  (2.7.1's reducer.hpp, compiled
//  13)     |                                                          |  by check-libtorch 2026-11-27)
// 2.8      | same                                                     | no per_bucket_size_limits;
//          |                                                          |  + skip_all_reduce_unused_params,
//          |                                                          |  + use_python_reducer
// 2.14     | same (BackendType: XCCL=5, CUSTOM=6 since 2.6; gloo's     | + bucket_bytes_cap_list (empty:
// (newest) | createDeviceFor*(name, lazyInit = false))                 |  {first_cap, cap} as before),
//          |                                                          |  + batched_grad_copy = false
//
// The TCPStore: 1.13-2.1 have only the classic server. Later releases add TCPStoreOptions::useLibUV
// (a libuv server), true by default from 2.4 on, and a LibTorch built without libuv (Debian 13's)
// throws "use_libuv was requested but PyTorch was build without libuv support" for a server and a
// client alike. trainrun asks for libuv only where the option exists (has_libuv_option below looks
// for the option itself, no release number) and falls back to the classic server where the build
// lacks libuv (runner/distributed/store.cpp; README, "The rendezvous store").
//
// Read in PyTorch's own sources (c10d/ProcessGroup.hpp, Backend.hpp, ProcessGroupGloo.hpp,
// ProcessGroupNCCL.hpp, reducer.hpp, TCPStore.hpp, torch/distributed/distributed_c10d.py,
// rendezvous.py) of 2.2.2, 2.3.0, 2.6.0, 2.8.0 (reducer.hpp and distributed_c10d.py only) and
// 2.14.0; the 2.0/2.1 ProcessGroup API and _new_process_group_helper are those of 2.2. The Options
// removal is pytorch#132931 (relanded as #135653 on 2024-09-12, after the 2.5 branch cut of
// 2024-09-09); the 2.8 Reducer arguments are pytorch#151503 and #152735 (April-May 2025);
// bucket_bytes_cap_list is pytorch#169026 (November 2025). The Reducer of 2.9-2.13 was not read:
// from 2.7 on, the constructor is picked by its signature (the four known ones), and a fifth
// fails to compile with a message. (2.7's was assumed to be 2.6's until its headers were checked:
// the message fired, 2026-11-27.) Debian 12's 1.13.1 and Debian 13's 2.6.0 are built and
// tested (README, "Tested on").
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#define TRAINRUN_C10D_BACKEND 1  // gloo and NCCL are c10d::Backend, held by a c10d::ProcessGroup
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define TRAINRUN_C10D_PG_WITHOUT_OPTIONS 1  // ProcessGroup(store, rank, size) + setDefaultBackend
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
// Autocast (runner/train/autocast.h): 2.4 made at::autocast's C++ API device-generic
// (is/set_autocast_enabled(device_type), set_autocast_dtype(device_type, dtype); pytorch#124359)
// and deprecated the per-device calls (is_cpu_enabled, set_autocast_cpu_dtype, ...), which then
// print a warning on every run that uses them.
#define TRAINRUN_AUTOCAST_BY_DEVICE 1
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
#define TRAINRUN_C10D_REDUCER_BY_SIGNATURE 1
#endif

#include <type_traits>
#include <utility>

namespace trainrun::compat {

// Whether c10d's TCPStoreOptions `Options` has useLibUV (a release with a libuv server).
template <class Options, class = void>
struct has_libuv_option : std::false_type {};
template <class Options>
struct has_libuv_option<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>> : std::true_type {};

}  // namespace trainrun::compat
