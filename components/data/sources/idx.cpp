#include "components/data/sources/idx.h"

#include "components/data/data_error.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
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

// Memory the tensor will own and the bytes of it that are filled.
struct Filled {
  Mapping memory;
  std::size_t size;
};

// A one-member gzip file, inflated whole by libdeflate into memory of the size its trailer
// states: 0.12 s for Fashion-MNIST's train images on the AMD VM, where zlib's streaming gzread
// takes 0.30 s (every run decompresses them, in every process). Empty for anything else (a raw
// file, several members, a trailer that lies, corrupt data): the streaming reader reads those
// and says what is wrong with them.
std::optional<Filled> inflate_whole(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 18;  // gzip's header + trailer
  Mapping in(regular ? std::size_t(st.st_size) : 1);
  std::size_t got = 0;
  while (regular && in && got < in.capacity()) {
    ssize_t n = ::read(fd, in.data() + got, in.capacity() - got);
    if (n <= 0) break;
    got += std::size_t(n);
  }
  close(fd);
  const auto* bytes = reinterpret_cast<const unsigned char*>(in.data());
  if (!regular || !in || got != in.capacity() || bytes[0] != 0x1f || bytes[1] != 0x8b) return std::nullopt;
  const std::size_t isize = std::size_t(bytes[got - 4]) | std::size_t(bytes[got - 3]) << 8 |
                            std::size_t(bytes[got - 2]) << 16 | std::size_t(bytes[got - 1]) << 24;
  if (isize > got * 1032) return std::nullopt;  // more than deflate can give: a lying trailer
  Filled out{Mapping(isize), 0};
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(libdeflate_alloc_decompressor(),
                                                                                  libdeflate_free_decompressor);
  std::size_t in_used = 0;
  if (!out.memory || !d ||
      libdeflate_gzip_decompress_ex(d.get(), in.data(), got, out.memory.data(), isize, &in_used, &out.size) !=
          LIBDEFLATE_SUCCESS ||
      in_used != got || out.size != isize)
    return std::nullopt;
  return out;
}

// The IDX header from `read`: element type, dimensions and what they promise.
struct Header {
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  bool overflow = false;  // four 32-bit sizes may not even multiply within 64 bits
  std::string promise;
};

template <class Read>
Header read_header(const std::string& path, Read&& read) {
  unsigned char magic[4];
  if (read(magic, 4) != 4) throw DataError(path + ": truncated IDX header");
  if (magic[0] != 0 || magic[1] != 0) throw DataError(path + ": not an IDX file (bad magic)");
  if (magic[2] != 0x08) throw DataError(path + ": IDX element type is not uint8");
  int ndim = magic[3];
  if (ndim < 1 || ndim > 4) throw DataError(path + ": IDX has " + std::to_string(ndim) + " dimensions");
  Header h;
  h.sizes.resize(ndim);
  int64_t strides = 1;
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    if (read(b, 4) != 4) throw DataError(path + ": truncated IDX header");
    h.sizes[d] = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | b[3];
    h.overflow = h.overflow || __builtin_mul_overflow(h.numel, h.sizes[d], &h.numel);
    // A zero size makes the count 0 whatever the others are, but the tensor's strides are still
    // the products of the sizes after it (found by fuzz/idx_fuzz.cpp: 0 x 4227882240 x ...).
    if (h.sizes[d] != 0) h.overflow = h.overflow || __builtin_mul_overflow(strides, h.sizes[d], &strides);
    h.promise += (h.promise.empty() ? "" : " x ") + std::to_string(h.sizes[d]);
  }
  return h;
}

// The header's sizes are only a promise: the data found (at most one byte more than promised is
// read) must be exactly that.
void check_size(const std::string& path, const Header& h, std::size_t found) {
  if (!h.overflow && int64_t(found) == h.numel) return;
  std::string promised = h.overflow ? h.promise + " (more than any file holds)" : h.promise + " = " + std::to_string(h.numel);
  if (!h.overflow && int64_t(found) > h.numel)
    throw DataError(path + ": longer than its header says: header promises " + promised + " bytes of data, found more");
  throw DataError(path + ": truncated: header promises " + promised + " bytes of data, found " + std::to_string(found));
}

at::Tensor owned_tensor(Mapping memory, std::size_t offset, const std::vector<int64_t>& sizes) {
  auto* owner = new Mapping(std::move(memory));
  return at::from_blob(owner->data() + offset, sizes, [owner](void*) { delete owner; }, at::TensorOptions(at::kByte));
}

}  // namespace

at::Tensor read_idx(const std::string& path) {
  if (!std::filesystem::exists(path)) throw DataError(path + ": no such file");
  if (std::optional<Filled> whole = inflate_whole(path)) {
    std::size_t at = 0;
    Header h = read_header(path, [&](void* dst, int64_t n) {
      n = std::min<int64_t>(n, int64_t(whole->size - at));
      std::memcpy(dst, whole->memory.data() + at, std::size_t(n));
      at += std::size_t(n);
      return n;
    });
    check_size(path, h, whole->size - at);
    return owned_tensor(std::move(whole->memory), at, h.sizes);
  }
  GzFile f(path);
  if (!f) throw DataError(path + ": cannot open");
  Header h = read_header(path, [&](void* dst, int64_t n) { return f.read(dst, n); });
  // The buffer the tensor will own, sized once (a raw file holds its size; a gzip stream at most
  // 1032 times its size, deflate's largest ratio) so that it is never copied or zero-filled, and
  // backed by huge pages where the kernel gives them: on a VM where a 4 KiB page fault costs
  // ~13 us, Fashion-MNIST's 47 MB train images took ~30k faults (0.4 s) with a growing string.
  const int64_t limit = h.overflow ? std::numeric_limits<int64_t>::max() : h.numel;
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
  check_size(path, h, size);
  return owned_tensor(std::move(buf), 0, h.sizes);
}

}  // namespace trainrun
