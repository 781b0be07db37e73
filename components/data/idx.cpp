#include "components/data/idx.h"

#include "components/data/dataset.h"

#include <ATen/ATen.h>
#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

namespace trainrun {

namespace {

// gzread reads plain files too, so one reader serves `.gz` and raw IDX.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {}
  ~GzFile() { if (f_) gzclose(f_); }
  explicit operator bool() const { return f_ != nullptr; }
  bool direct() { return gzdirect(f_) == 1; }  // a plain file, read as is (asked after a read)
  int64_t read(void* dst, int64_t n) {
    int64_t done = 0;
    while (done < n) {
      unsigned chunk = unsigned(std::min<int64_t>(n - done, 1 << 30));
      int got = gzread(f_, static_cast<char*>(dst) + done, chunk);
      if (got <= 0) break;
      done += got;
    }
    return done;
  }

 private:
  gzFile f_;
};

// Anonymous memory of a fixed capacity, touched only where written.
class Mapping {
 public:
  explicit Mapping(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {
    void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    data_ = static_cast<char*>(p);
    if (capacity_ >= (2u << 20)) madvise(data_, capacity_, MADV_HUGEPAGE);
  }
  Mapping(Mapping&& o) noexcept : data_(std::exchange(o.data_, nullptr)), capacity_(o.capacity_) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { if (data_) munmap(data_, capacity_); }
  explicit operator bool() const { return data_ != nullptr; }
  char* data() const { return data_; }
  std::size_t capacity() const { return capacity_; }

 private:
  char* data_ = nullptr;
  std::size_t capacity_;
};

}  // namespace

at::Tensor read_idx(const std::string& path) {
  if (!std::filesystem::exists(path)) throw DataError(path + ": no such file");
  GzFile f(path);
  if (!f) throw DataError(path + ": cannot open");
  unsigned char magic[4];
  if (f.read(magic, 4) != 4) throw DataError(path + ": truncated IDX header");
  if (magic[0] != 0 || magic[1] != 0) throw DataError(path + ": not an IDX file (bad magic)");
  if (magic[2] != 0x08) throw DataError(path + ": IDX element type is not uint8");
  int ndim = magic[3];
  if (ndim < 1 || ndim > 4) throw DataError(path + ": IDX has " + std::to_string(ndim) + " dimensions");
  std::vector<int64_t> sizes(ndim);
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    if (f.read(b, 4) != 4) throw DataError(path + ": truncated IDX header");
    sizes[d] = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | b[3];
  }
  // The header's sizes are only a promise (four 32-bit sizes may not even multiply within 64
  // bits): read what the file holds, at most one byte more than promised (a gzip stream's length
  // is known only by reading it), and compare before the tensor is made.
  int64_t numel = 1;
  bool overflow = false;
  std::string promise;
  for (int64_t s : sizes) {
    overflow = overflow || __builtin_mul_overflow(numel, s, &numel);
    promise += (promise.empty() ? "" : " x ") + std::to_string(s);
  }
  const int64_t limit = overflow ? std::numeric_limits<int64_t>::max() : numel;
  // The buffer the tensor will own, sized once (a raw file holds its size; a gzip stream at most
  // 1032 times its size, deflate's largest ratio) so that it is never copied or zero-filled, and
  // backed by huge pages where the kernel gives them: on a VM where a 4 KiB page fault costs
  // ~13 us, Fashion-MNIST's 47 MB train images took ~30k faults (0.4 s) with a growing string.
  std::error_code ec;
  const std::uintmax_t file_size = std::filesystem::file_size(path, ec);  // a pipe has none
  const std::uintmax_t most = ec ? std::uintmax_t(1) << 36 : f.direct() ? file_size : file_size * 1032 + 64;
  Mapping buf(std::size_t(std::min<std::uintmax_t>(std::uintmax_t(limit) + 1, most)));
  if (!buf) throw DataError(path + ": cannot allocate " + std::to_string(buf.capacity()) + " bytes");
  std::size_t size = 0;
  for (int64_t got = 1; got > 0 && size < buf.capacity();) {
    got = f.read(buf.data() + size, int64_t(buf.capacity() - size));
    size += std::size_t(got);
  }
  if (overflow || int64_t(size) != numel) {
    std::string promised = overflow ? promise + " (more than any file holds)" : promise + " = " + std::to_string(numel);
    if (!overflow && int64_t(size) > numel)
      throw DataError(path + ": longer than its header says: header promises " + promised + " bytes of data, found more");
    throw DataError(path + ": truncated: header promises " + promised + " bytes of data, found " + std::to_string(size));
  }
  auto* owner = new Mapping(std::move(buf));
  return at::from_blob(owner->data(), sizes, [owner](void*) { delete owner; }, at::TensorOptions(at::kByte));
}

}  // namespace trainrun
