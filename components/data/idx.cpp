#include "components/data/idx.h"

#include "components/data/dataset.h"

#include <ATen/ATen.h>
#include <zlib.h>

#include <filesystem>

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
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    if (f.read(b, 4) != 4) throw DataError(path + ": truncated IDX header");
    sizes[d] = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | b[3];
    numel *= sizes[d];
  }
  at::Tensor out = at::empty(sizes, at::kByte);
  int64_t got = f.read(out.data_ptr(), numel);
  if (got != numel)
    throw DataError(path + ": truncated: header promises " + std::to_string(numel) + " bytes of data, found " +
                    std::to_string(got));
  return out;
}

}  // namespace trainrun
