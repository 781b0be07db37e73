#include "runner/recipe/onednn_check.h"

#include <dlfcn.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace trainrun {
namespace {

// oneDNN's own version, as its C API reports it (dnnl_version(); libdnnl is loaded with
// libtorch_cpu). 0 where LibTorch carries oneDNN inside with its symbols hidden (LibTorch
// archives and wheels of 2.x: oneDNN 3.x).
int onednn_major() {
  struct Version {
    int major, minor, patch;
  };
  using Fn = const Version* (*)();
  auto fn = reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, "dnnl_version"));
  return fn ? fn()->major : 0;
}

// The CPU has the deterministic cache leaf (its highest leaf is at or above it, which is what
// oneDNN's CPU detection, xbyak, goes by) and reports no cache in it.
bool cache_leaf_empty() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool amd = b == 0x68747541;  // "Auth"enticAMD
  const unsigned leaf = amd ? 0x8000001d : 4;
  if (amd) a = __get_cpuid_max(0x80000000, nullptr);
  if (a < leaf) return false;
  __cpuid_count(leaf, 0, a, b, c, d);
  return (a & 0x1f) == 0;  // cache type of sub-leaf 0: "no more caches" before the first one
#else
  return false;
#endif
}

}  // namespace

std::optional<std::string> onednn_channels_last_fault() {
  static const std::optional<std::string> fault = []() -> std::optional<std::string> {
    if (!cache_leaf_empty()) return std::nullopt;
    const int major = onednn_major();
    if (major != 0 && major < 3) return std::nullopt;
    return std::string("oneDNN ") + (major ? std::to_string(major) + ".x" : "3.x") +
           "'s channels_last convolutions give wrong results or crash on this CPU, which reports no caches "
           "(CPUID's cache leaf is empty, as on some VMs)";
  }();
  return fault;
}

}  // namespace trainrun
