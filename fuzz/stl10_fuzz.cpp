// The STL-10 binary reader (components/data/sources/stl10.cpp) through the registry, as a recipe builds
// it: the input starts with four lengths (4 bytes each, little-endian, the low 20 bits count) of
// train_X.bin, train_y.bin, test_X.bin and test_y.bin, then their bytes; what is left is
// class_names.txt (none when nothing is left). Every example of both splits is read.
#include "components/data/dataset.h"
#include "fuzz/fuzz_util.h"
#include "registry/registry.h"

#include <yaml-cpp/yaml.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  if (size < 16) return 0;
  static const auto root = fuzz::scratch() / "stl10_binary";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::string_view rest(reinterpret_cast<const char*>(data) + 16, size - 16);
  int i = 0;
  for (const char* name : {"train_X.bin", "train_y.bin", "test_X.bin", "test_y.bin"}) {
    const uint8_t* l = data + 4 * i++;
    size_t n = std::min<size_t>(rest.size(), size_t(l[0] | l[1] << 8 | (l[2] & 0x0f) << 16));
    fuzz::write_file(root / name, rest.substr(0, n));
    rest.remove_prefix(n);
  }
  if (!rest.empty()) fuzz::write_file(root / "class_names.txt", rest);
  YAML::Node config;
  config["name"] = "stl10";
  config["root"] = root.string();
  config["download"] = false;
  fuzz::expect_only<DataError>([&] {
    DatasetSplits splits = Registry<Dataset>::instance().get("stl10").make(Config(config, "data.dataset"));
    for (const auto& split : {splits.train, splits.eval})
      if (split)
        for (std::size_t i = 0; i < split->size(); ++i) (void)split->get(i);
  });
  return 0;
}
