#include "support/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace trainrun {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what, int err) {
  throw FileWriteError(path.string() + ": " + what + ": " + std::strerror(err));
}

// Plain write(2)/fsync(2), for the errno a full disk gives (an ofstream would only say "failed").
void write_fd(const fs::path& path, const fs::path& named, const std::vector<Bytes>& pieces) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(named, "cannot write", errno);
  for (const Bytes& piece : pieces) {
    const char* p = static_cast<const char*>(piece.data);
    std::size_t left = piece.size;
    while (left > 0) {
      ssize_t w = ::write(fd, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        int err = errno;
        ::close(fd);
        fail(named, "write failed", err);
      }
      p += w;
      left -= std::size_t(w);
    }
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    fail(named, "fsync failed", err);
  }
  if (::close(fd) != 0) fail(named, "close failed", errno);
}

}  // namespace

void write_durable(const fs::path& path, const std::vector<Bytes>& pieces) { write_fd(path, path, pieces); }

void write_file_atomic(const fs::path& path, const std::vector<Bytes>& pieces) {
  fs::path tmp = path;
  tmp += ".tmp";
  try {
    write_fd(tmp, path, pieces);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, "rename failed", errno);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  fs::path dir = path.parent_path();
  fsync_dir(dir.empty() ? fs::path(".") : dir);
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail(dir, "cannot open", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail(dir, "fsync failed", err);
}

}  // namespace trainrun
