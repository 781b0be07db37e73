#include "components/data/shards/shard_writer.h"

#include "components/data/image.h"
#include "support/durable_file.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// Every member's mtime. TarWriter stamps the current time unless given `mtime` ("set this to some
// fixed value to get reproducible tar files"); a fixed one makes the same input the same bytes.
constexpr time_t kShardMtime = 0;
constexpr int64_t kTarBlock = 512;

// Image files copied as they are: the extensions WebDataset readers (ours, timm's, webdataset's
// own decoder) take an image from. Other files (tif, ppm, ...) are re-encoded as PNG.
bool copied_as_is(const std::string& ext) {
  for (const char* e : {"jpg", "jpeg", "png", "webp", "bmp"})
    if (ext == e) return true;
  return false;
}

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UnreadableFile(path + ": cannot open the file");
  std::vector<unsigned char> out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UnreadableFile(path + ": cannot read the file");
  return out;
}

// One member of a sample: KEY.<field>.
struct SampleField {
  std::string field;
  std::vector<unsigned char> bytes;
};

// The label's member: `cls`, the class index as TarWriter's encoder writes an int (str(), no
// newline); a multi-label dataset's set as `json`, {"labels": [3, 7]}, as json.dumps writes it.
SampleField label_field(const Dataset& data, int64_t label, const std::vector<int64_t>& labels) {
  const std::string text = data.multilabel() ? nlohmann::json{{"labels", labels}}.dump() : std::to_string(label);
  return {data.multilabel() ? "json" : "cls", std::vector<unsigned char>(text.begin(), text.end())};
}

// The sample's fields in the order TarWriter writes them (sorted by name).
std::vector<SampleField> sample_fields(const Dataset& data, std::size_t index) {
  std::vector<SampleField> fields;
  int64_t label = 0;
  std::vector<int64_t> labels;
  const std::optional<std::string> file = data.source_file(index);
  if (file && copied_as_is(lower_extension(*file))) {
    fields.push_back({lower_extension(*file), file_bytes(*file)});
    label = data.label(index);
    if (data.multilabel()) labels = data.labels(index);
  } else {
    Example ex = data.get(index);
    try {
      fields.push_back({"png", encode_png(ex.image)});
    } catch (const DataError& e) {
      throw DataError("example " + std::to_string(index) + (file ? " (" + *file + ")" : "") + ": " + e.what());
    }
    label = ex.label;
    labels = ex.labels;
  }
  fields.push_back(label_field(data, label, labels));
  std::sort(fields.begin(), fields.end(), [](const SampleField& a, const SampleField& b) { return a.field < b.field; });
  return fields;
}

int64_t round_up_to(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// A member's bytes in the tar: its header block and its data padded to whole blocks.
int64_t member_bytes(const SampleField& f) { return kTarBlock + round_up_to(int64_t(f.bytes.size()), kTarBlock); }

// The file holding members of `members` bytes: the two zero blocks that end a tar, then padding
// to a whole record.
int64_t shard_file_bytes(int64_t members) { return round_up_to(members + 2 * kTarBlock, kTarRecordSize); }

[[noreturn]] void write_failed(const fs::path& path, const std::string& what, const std::string& why) {
  throw FileWriteError(path.string() + ": " + what + ": " + why);
}

// One shard being written: libarchive's USTAR writer on PATH.incomplete, renamed to PATH by
// finish(); removed if it is dropped unfinished.
class TarShardFile {
 public:
  explicit TarShardFile(fs::path path) : path_(std::move(path)), part_(path_.string() + ".incomplete") {
    fd_ = ::open(part_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) write_failed(part_, "cannot create", std::strerror(errno));
    tar_ = archive_write_new();
    archive_write_set_format_ustar(tar_);  // TarWriter's default format
    archive_write_add_filter_none(tar_);
    // Python's tarfile pads the file to whole records; libarchive would stop after the end blocks
    // of a regular file unless told (set before open, which would choose otherwise).
    archive_write_set_bytes_per_block(tar_, int(kTarRecordSize));
    archive_write_set_bytes_in_last_block(tar_, int(kTarRecordSize));
    if (archive_write_open_fd(tar_, fd_) != ARCHIVE_OK) write_failed(part_, "cannot start the tar", reason());
  }
  TarShardFile(const TarShardFile&) = delete;
  TarShardFile& operator=(const TarShardFile&) = delete;
  ~TarShardFile() {
    if (tar_) archive_write_free(tar_);
    if (fd_ >= 0) ::close(fd_);
    if (!done_) ::unlink(part_.c_str());
  }

  void add(const std::string& name, const std::vector<unsigned char>& bytes) {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_size(entry.get(), la_int64_t(bytes.size()));
    archive_entry_set_perm(entry.get(), 0444);  // TarWriter's mode, user and group
    archive_entry_set_uname(entry.get(), "bigdata");
    archive_entry_set_gname(entry.get(), "bigdata");
    archive_entry_set_mtime(entry.get(), kShardMtime, 0);
    if (archive_write_header(tar_, entry.get()) != ARCHIVE_OK) write_failed(part_, "cannot add " + name, reason());
    if (!bytes.empty() && archive_write_data(tar_, bytes.data(), bytes.size()) != la_ssize_t(bytes.size()))
      write_failed(part_, "cannot write " + name, reason());
  }

  // Closes the tar, syncs it and renames it to its name; returns its size.
  int64_t finish() {
    if (archive_write_close(tar_) != ARCHIVE_OK) write_failed(part_, "cannot finish the tar", reason());
    if (::fsync(fd_) != 0) write_failed(part_, "cannot sync", std::strerror(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) write_failed(part_, "cannot close", std::strerror(errno));
    std::error_code ec;
    fs::rename(part_, path_, ec);
    if (ec) write_failed(part_, "cannot rename to " + path_.filename().string(), ec.message());
    done_ = true;
    return int64_t(fs::file_size(path_));
  }

 private:
  std::string reason() const {
    const char* s = archive_error_string(tar_);
    return s ? s : "unknown libarchive error";
  }

  fs::path path_, part_;
  int fd_ = -1;
  struct archive* tar_ = nullptr;
  bool done_ = false;
};

// The order samples are written in: torch.randperm(n, generator=torch.Generator().manual_seed(seed)),
// so that a class-sorted folder does not make each shard one class.
std::vector<int64_t> sample_order(int64_t n, const ShardWriterOptions& options) {
  if (!options.shuffle || n == 0) {
    std::vector<int64_t> order(std::size_t(n), 0);
    for (int64_t i = 0; i < n; ++i) order[std::size_t(i)] = i;
    return order;
  }
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  at::Tensor perm = at::randperm(n, gen, at::kLong);
  return std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
}

std::string decimal_size(int64_t bytes) {
  if (bytes >= 1'000'000'000) return fmt::format("{:.2f} GB", double(bytes) / 1e9);
  if (bytes >= 1'000'000) return fmt::format("{:.1f} MB", double(bytes) / 1e6);
  return fmt::format("{:.1f} KB", double(bytes) / 1e3);
}

// The shard being filled.
struct OpenShard {
  std::unique_ptr<TarShardFile> file;
  ShardFile info;
  int64_t members = 0;  // bytes of its members so far
};

ShardFile finish_shard(OpenShard& shard) {
  shard.info.bytes = shard.file->finish();
  spdlog::info("{}: {} samples, {}", shard.info.name, shard.info.samples, decimal_size(shard.info.bytes));
  return shard.info;
}

}  // namespace

std::vector<ShardFile> write_shards(const Dataset& data, const std::string& split, const ShardWriterOptions& options,
                                    const fs::path& dir) {
  if (split.empty() || split.find('/') != std::string::npos)
    throw std::invalid_argument("split name '" + split + "': not a file name");
  if (options.max_count < 1) throw std::invalid_argument("max_count must be at least 1");
  if (options.max_size < kTarRecordSize)
    throw std::invalid_argument("max_size must be at least one tar record (" + std::to_string(kTarRecordSize) + " bytes)");
  const std::vector<int64_t> order = sample_order(int64_t(data.size()), options);
  std::vector<ShardFile> written;
  std::optional<OpenShard> shard;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::vector<SampleField> fields = sample_fields(data, std::size_t(order[k]));
    int64_t size = 0;
    for (const auto& f : fields) size += member_bytes(f);
    if (shard && (shard->info.samples >= options.max_count || shard_file_bytes(shard->members + size) > options.max_size)) {
      written.push_back(finish_shard(*shard));
      shard.reset();
    }
    if (!shard) {
      const std::string name = fmt::format("{}-{:06d}.tar", split, written.size());
      shard.emplace(OpenShard{std::make_unique<TarShardFile>(dir / name), ShardFile{name}});
    }
    const std::string key = fmt::format("{:09d}", k);  // no dot: WebDataset splits KEY.FIELD at the first one
    for (const auto& f : fields) shard->file->add(key + "." + f.field, f.bytes);
    shard->members += size;
    ++shard->info.samples;
  }
  if (shard) written.push_back(finish_shard(*shard));
  fsync_dir(dir);
  return written;
}

void write_shard_index(const fs::path& dir, const std::vector<ShardFile>& shards, const std::vector<std::string>& classes) {
  std::string lines;
  for (const auto& c : classes) {
    if (c.find_first_of("\r\n") != std::string::npos)
      throw DataError("class name '" + c + "' holds a line break; classes.txt has one name a line");
    lines += c + "\n";
  }
  nlohmann::ordered_json sizes = nlohmann::ordered_json::object();
  for (const auto& s : shards) sizes[s.name] = s.samples;
  write_file_atomic(dir / "sizes.json", sizes.dump(2) + "\n");
  write_file_atomic(dir / "classes.txt", lines);
}

std::string shards_summary(const std::string& split, const std::vector<ShardFile>& shards) {
  int64_t samples = 0, bytes = 0;
  for (const auto& s : shards) {
    samples += s.samples;
    bytes += s.bytes;
  }
  return fmt::format("{}: {} shard{}, {} samples, {}", split, shards.size(), shards.size() == 1 ? "" : "s", samples,
                     decimal_size(bytes));
}

int64_t parse_byte_size(const std::string& text) {
  static const std::regex form(R"(^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$)");
  const std::string expected =
      "'" + text + "': expected a size in bytes: a number, with an optional unit KB, MB, GB, TB (powers of 1000) or "
      "KiB, MiB, GiB, TiB (powers of 1024)";
  std::smatch m;
  if (!std::regex_match(text, m, form)) throw std::invalid_argument(expected);
  std::string unit = m[2].str();
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  static const std::vector<std::pair<std::string, double>> units = {
      {"", 1},        {"b", 1},          {"k", 1e3},        {"kb", 1e3},       {"m", 1e6},      {"mb", 1e6},
      {"g", 1e9},     {"gb", 1e9},       {"t", 1e12},       {"tb", 1e12},      {"kib", 1024.0}, {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  auto it = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == unit; });
  if (it == units.end()) throw std::invalid_argument(expected);
  const double bytes = std::stod(m[1].str()) * it->second;
  if (!(bytes < 9e18)) throw std::invalid_argument("'" + text + "': too large");
  return int64_t(std::llround(bytes));
}

}  // namespace trainrun
