// The IDX reader (MNIST / Fashion-MNIST files, raw or gzip): components/data/sources/idx.cpp.
#include "components/data/dataset.h"
#include "components/data/sources/idx.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  std::string path = fuzz::write_file("input-idx3-ubyte", data, size);
  fuzz::expect_only<DataError>([&] { (void)read_idx(path); });
  return 0;
}
