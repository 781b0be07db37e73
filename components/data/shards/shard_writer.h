// A dataset written as WebDataset tar shards (`trainrun shards`), laid out as webdataset's
// ShardWriter and TarWriter write them (src/webdataset/writer.py at e0953f9): USTAR members
// KEY.FIELD with a sample's members consecutive in sorted field order, mode 0o444, owner
// bigdata:bigdata, the file padded to whole 10240-byte records as Python's tarfile pads it.
// Deterministic: the same dataset, options and seed give the same bytes.
#pragma once

#include "components/data/dataset.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace trainrun {

struct ShardWriterOptions {
  int64_t max_count = 100000;          // samples in a shard (ShardWriter's maxcount)
  int64_t max_size = 3'000'000'000;    // bytes of a shard file (ShardWriter's maxsize, 3e9)
  bool shuffle = true;                 // else the dataset's order
  uint64_t seed = 0;
};

// One shard on disk.
struct ShardFile {
  std::string name;  // "train-000000.tar", in the output folder
  int64_t samples = 0;
  int64_t bytes = 0;
};

// Writes `data` as `dir`/SPLIT-000000.tar, SPLIT-000001.tar, ... (`dir` exists). Samples go in
// the order torch.randperm(n, generator=torch.Generator().manual_seed(seed)) gives (the dataset's
// order without shuffle); sample k has key "%09d" % k and two fields: the image and `cls`, the
// label as decimal text (a multi-label dataset: `json`, {"labels": [3, 7]}). The image is the source file's bytes under its lower-cased extension
// when the dataset reads whole jpg/jpeg/png/webp/bmp files (Dataset::source_file), else the
// decoded pixels as a PNG. A shard ends at max_count samples or before the sample that would make
// the file larger than max_size; a sample larger than max_size alone fills a shard. Each shard is
// written as NAME.incomplete and renamed when whole. Throws UnreadableFile for a sample that
// cannot be read, FileWriteError when the disk refuses, std::invalid_argument for options out of
// range or a split name with a '/'.
std::vector<ShardFile> write_shards(const Dataset& data, const std::string& split, const ShardWriterOptions& options,
                                    const std::filesystem::path& dir);

// `dir`/sizes.json ({"train-000000.tar": samples, ...}, as OpenCLIP reads it) and `dir`/classes.txt
// (one class name a line, in label order), each written atomically.
void write_shard_index(const std::filesystem::path& dir, const std::vector<ShardFile>& shards,
                       const std::vector<std::string>& classes);

// "train: 3 shards, 2500 samples, 301.2 MB", for the log.
std::string shards_summary(const std::string& split, const std::vector<ShardFile>& shards);

// "256MB", "1GB", "512KB" (decimal units, as ShardWriter's 3e9), "1GiB", "3e9", "1000000" ->
// bytes. Throws std::invalid_argument saying what it expected.
int64_t parse_byte_size(const std::string& text);

// The smallest max_size a shard file can meet: one tar record.
constexpr int64_t kTarRecordSize = 10240;

}  // namespace trainrun
