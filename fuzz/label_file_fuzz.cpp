// The labels-file reader (components/data/sources/label_file.cpp: CSV through libcsv, JSON lines)
// through the image_csv dataset, as a recipe builds it: the input's first byte picks the format
// (even: labels.csv, odd: labels.jsonl) and whether the dataset reads one label per image
// (bit 1: multilabel false, else auto); the rest is the file. The root holds a.png and b.png, so
// rows naming them become examples, and every example's label set is read.
#include "components/data/dataset.h"
#include "components/data/image.h"
#include "fuzz/fuzz_util.h"
#include "registry/registry.h"

#include <ATen/ATen.h>
#include <yaml-cpp/yaml.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  if (size < 1) return 0;
  static const auto root = fuzz::scratch() / "images";
  static const bool made = [] {
    std::filesystem::create_directories(root);
    for (const char* name : {"a.png", "b.png"}) write_image((root / name).string(), at::full({4, 4, 3}, 9, at::kByte));
    return true;
  }();
  (void)made;
  const std::string file = (root.parent_path() / ((data[0] & 1) ? "labels.jsonl" : "labels.csv")).string();
  fuzz::write_file(file, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  const auto& entry = Registry<Dataset>::instance().get("image_csv");
  YAML::Node config;
  for (const Param& p : entry.schema.params())
    if (!p.required) config[p.name] = YAML::Clone(p.default_value);
  config["name"] = "image_csv";
  config["root"] = root.string();
  config["labels_file"] = file;
  config["val_labels_file"] = file;
  if (data[0] & 2) config["multilabel"] = false;
  fuzz::expect_only<DataError>([&] {
    DatasetSplits splits = entry.make(Config(config, "data.dataset"));
    for (const auto& split : {splits.train, splits.eval})
      for (std::size_t i = 0; i < split->size(); ++i) (void)split->labels(i);
  });
  return 0;
}
