// The ABI record every library built against trainrun's headers carries (registry.h includes
// this): the trainrun version, the LibTorch version and the C++ standard library's string ABI it
// was compiled with, in an ELF section of its own. load_plugin reads a plugin's record from the
// file before dlopen runs any of its code, and refuses one built for another trainrun or LibTorch
// (exit 2 naming both) instead of crashing in its static initialisers.
#pragma once

#include <torch/version.h>

#include <cstddef>  // libstdc++'s c++config.h: _GLIBCXX_USE_CXX11_ABI

#define TRAINRUN_ABI_STR_(x) #x
#define TRAINRUN_ABI_STR(x) TRAINRUN_ABI_STR_(x)
#ifndef _GLIBCXX_USE_CXX11_ABI
#define TRAINRUN_ABI_CXX11 "none"
#else
#define TRAINRUN_ABI_CXX11 TRAINRUN_ABI_STR(_GLIBCXX_USE_CXX11_ABI)
#endif

// "trainrun 0.1.0; LibTorch 1.13.0; libstdc++ C++11 ABI 1": what must match between trainrun and
// a plugin. (GCC and Clang share the Itanium C++ ABI, so the compiler itself is not part of it.)
#define TRAINRUN_ABI_RECORD                                                                           \
  "trainrun " TRAINRUN_VERSION "; LibTorch " TRAINRUN_ABI_STR(TORCH_VERSION_MAJOR) "." TRAINRUN_ABI_STR( \
      TORCH_VERSION_MINOR) "." TRAINRUN_ABI_STR(TORCH_VERSION_PATCH) "; libstdc++ C++11 ABI " TRAINRUN_ABI_CXX11

namespace trainrun::plugin_abi {

// The section load_plugin looks for; one copy per library (an inline variable is merged by the linker).
[[gnu::used, gnu::section(".trainrun_abi")]] inline constexpr char kRecord[] = TRAINRUN_ABI_RECORD;

}  // namespace trainrun::plugin_abi
