#include "components/data/idx.h"

#include "components/data/dataset.h"

#include <ATen/ATen.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>

namespace trainrun {

namespace {

// gzread reads plain files too, so one reader serves `.gz` and raw IDX.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {}
  ~GzFile() { if (f_) gzclose(f_); }
  explicit operator bool() const { return f_ != nullptr; }
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
  // is known only by reading it), and compare before anything is allocated for the tensor.
  int64_t numel = 1;
  bool overflow = false;
  std::string promise;
  for (int64_t s : sizes) {
    overflow = overflow || __builtin_mul_overflow(numel, s, &numel);
    promise += (promise.empty() ? "" : " x ") + std::to_string(s);
  }
  const int64_t limit = overflow ? std::numeric_limits<int64_t>::max() : numel;
  std::string data;
  while (int64_t(data.size()) <= limit) {
    std::size_t done = data.size(), chunk = std::size_t(std::min<int64_t>(limit - int64_t(done), (1 << 20) - 1) + 1);
    data.resize(done + chunk);
    int64_t got = f.read(data.data() + done, int64_t(chunk));
    data.resize(done + std::size_t(got));
    if (got < int64_t(chunk)) break;
  }
  if (overflow || int64_t(data.size()) != numel) {
    std::string promised = overflow ? promise + " (more than any file holds)" : promise + " = " + std::to_string(numel);
    if (!overflow && int64_t(data.size()) > numel)
      throw DataError(path + ": longer than its header says: header promises " + promised + " bytes of data, found more");
    throw DataError(path + ": truncated: header promises " + promised + " bytes of data, found " + std::to_string(data.size()));
  }
  auto* owner = new std::string(std::move(data));
  return at::from_blob(owner->data(), sizes, [owner](void*) { delete owner; }, at::TensorOptions(at::kByte));
}

}  // namespace trainrun
