#pragma once
// Whether oneDNN's channels_last (NHWC) convolutions can be trusted on this machine.
#include <optional>
#include <string>

namespace trainrun {

// Why channels_last convolutions must not run here, or nothing where they may.
//
// oneDNN 3.x (LibTorch 2.x; Debian 13's libdnnl 3.6) sizes its brgemm convolutions' blocks from
// the caches the CPU reports through CPUID's deterministic cache leaf (4 on Intel, 0x8000001d on
// AMD). Some VMs have the leaf and leave it empty (a Firecracker guest on an AMD EPYC: every
// sub-leaf of 0x8000001d zero, and leaf 0xb too). There the fp32 NHWC 1x1 convolutions of a
// resnet give wrong results (a 256->512 stride-2 1x1 on a 4x4 input: 50 % off) or die of an integer division by
// zero while the primitive is made; python3-torch 2.6 does the same on such a machine. oneDNN 2.x
// (LibTorch 1.13) runs them right there. The contiguous (NCHW) path is right on both.
std::optional<std::string> onednn_channels_last_fault();

}  // namespace trainrun
