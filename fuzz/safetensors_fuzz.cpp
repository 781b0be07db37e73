// The safetensors reader (weights from the Hub, checkpoints): support/safetensors.cpp.
#include "fuzz/fuzz_util.h"
#include "support/safetensors.h"

#include <ATen/core/Tensor.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  std::string path = fuzz::write_file("model.safetensors", data, size);
  fuzz::expect_only<WeightsError>([&] {
    for (auto& [name, t] : load_safetensors(path))
      if (!t.defined()) std::abort();
  });
  return 0;
}
