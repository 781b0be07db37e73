#include "components/data/shards/shard_source.h"

#include "components/data/shards/shard_urls.h"
#include "support/download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

namespace trainrun::wds {

namespace {

class FileSource : public Source {
 public:
  FileSource(const std::string& path, int64_t offset) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ShardError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw ShardError(path + ": is a folder, not a tar shard");
    }
    regular_ = S_ISREG(st.st_mode);
    if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) < 0) {
      int e = errno;
      ::close(fd_);
      throw ShardError(path + ": cannot seek to byte " + std::to_string(offset) + ": " + std::strerror(e));
    }
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  ~FileSource() override { ::close(fd_); }
  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, out, n);
      if (r >= 0) return std::size_t(r);
      if (errno != EINTR) throw ShardError(path_ + ": cannot read: " + std::strerror(errno));
    }
  }
  int64_t skip(int64_t n) override {
    if (!regular_) return 0;
    return ::lseek(fd_, n, SEEK_CUR) < 0 ? 0 : n;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
};

class HttpSource : public Source {
 public:
  HttpSource(const std::string& url, int64_t offset, const OpenOptions& o)
      : stream_(url, o.headers, offset, int(o.retries)) {}
  std::size_t read(char* out, std::size_t n) override {
    try {
      return stream_.read(out, n);
    } catch (const DownloadError& e) {
      throw ShardError(e.what());
    }
  }

 private:
  HttpStream stream_;
};

// A remote shard in options.cache_dir: downloaded whole (resumed, under a lock) the first time.
std::string cached_copy(const std::string& url, const OpenOptions& o) {
  std::string name = url.substr(url.find_last_of('/') + 1);
  std::string digest;  // the URL's folder, so that two datasets' train-000000.tar do not meet
  std::hash<std::string> h;
  digest = std::to_string(h(url.substr(0, url.size() - name.size())));
  std::filesystem::path dest = std::filesystem::path(o.cache_dir) / digest / name;
  DownloadRequest r;
  r.url = url;
  r.destination = dest;
  r.headers = o.headers;
  r.what = "shard";
  r.offline_hint = "or put the shard at " + dest.string();
  try {
    download(r);
  } catch (const DownloadError& e) {
    throw ShardError(e.what());
  }
  return dest.string();
}

}  // namespace

std::unique_ptr<Source> open_source(const std::string& url, int64_t offset, const OpenOptions& o) {
  if (starts_with(url, "pipe:")) throw ShardError(url + ": pipe: URLs are not supported; use a path or an http(s) URL");
  if (is_remote(url)) {
    if (!o.cache_dir.empty()) return std::make_unique<FileSource>(cached_copy(url, o), offset);
    return std::make_unique<HttpSource>(url, offset, o);
  }
  return std::make_unique<FileSource>(local_path(url), offset);
}

bool seekable(const std::string& url) { return ends_with(url, ".tar"); }

}  // namespace trainrun::wds
