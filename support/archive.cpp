#include "support/archive.h"

#include "support/durable_file.h"

#include <archive.h>
#include <archive_entry.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& archive, const std::string& why) {
  throw ArchiveError(archive.string() + ": " + why);
}

std::string reason(struct archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

using Reader = std::unique_ptr<struct archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<struct archive, decltype(&archive_write_free)>;

// Removes a path on scope exit unless released: the .incomplete file or the extraction folder.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path p) : path_(std::move(p)) {}
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// The entry's path relative to the extraction folder ("./images/a.jpg" -> "images/a.jpg"); an
// absolute path or a `..` is refused, as tarfile's "data" filter (Python 3.12) refuses them.
fs::path checked_entry_path(const fs::path& archive, const char* raw) {
  std::string name = raw ? raw : "";
  if (name.empty()) fail(archive, "an entry has no name");
  fs::path p(name);
  if (p.is_absolute()) fail(archive, "entry '" + name + "' has an absolute path; refused");
  fs::path out;
  for (const fs::path& part : p) {
    if (part == "..") fail(archive, "entry '" + name + "' points outside the folder (..); refused");
    if (part.empty() || part == ".") continue;
    out /= part;
  }
  return out;
}

// Datasets are files and folders; a link or a device could point outside the folder.
void check_entry_type(const fs::path& archive, struct archive_entry* entry, const std::string& name) {
  auto type = archive_entry_filetype(entry);
  if (archive_entry_hardlink(entry) || type == AE_IFLNK)
    fail(archive, "entry '" + name + "' is a link; only files and folders are unpacked");
  if (type != AE_IFREG && type != AE_IFDIR)
    fail(archive, "entry '" + name + "' is not a file or a folder; refused");
}

void copy_data(const fs::path& archive, struct archive* in, struct archive* out) {
  for (;;) {
    const void* buf;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(in, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return;
    if (r < ARCHIVE_WARN) fail(archive, reason(in));
    if (archive_write_data_block(out, buf, size, offset) < ARCHIVE_WARN) fail(archive, reason(out));
  }
}

// Every entry of the tar into `into` (an empty folder).
void unpack_tar(const fs::path& archive, const fs::path& into) {
  Reader in(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(in.get());
  archive_read_support_format_tar(in.get());
  if (archive_read_open_filename(in.get(), archive.c_str(), 1 << 16) != ARCHIVE_OK) fail(archive, reason(in.get()));
  Writer out(archive_write_disk_new(), archive_write_free);
  // Defence in depth behind the checks above: never write through a symlink or a `..`.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  bool any = false;
  for (;;) {
    struct archive_entry* entry;
    int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) fail(archive, reason(in.get()));
    std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    fs::path rel = checked_entry_path(archive, archive_entry_pathname(entry));
    check_entry_type(archive, entry, name);
    if (rel.empty()) continue;  // "./"
    archive_entry_set_pathname(entry, (into / rel).c_str());
    if (archive_write_header(out.get(), entry) < ARCHIVE_WARN) fail(archive, name + ": " + reason(out.get()));
    if (archive_entry_size(entry) > 0) copy_data(archive, in.get(), out.get());
    if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN) fail(archive, name + ": " + reason(out.get()));
    any = true;
  }
  if (!any) fail(archive, "holds no files");
}

bool is_single_gz(const fs::path& archive) {
  std::string name = archive.filename().string();
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".gz") && !ends(".tar.gz");
}

}  // namespace

void extract_archive(const fs::path& archive, const fs::path& dest_dir) {
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) fail(archive, "cannot create " + dest_dir.string() + ": " + ec.message());
  if (is_single_gz(archive)) {
    gunzip_file(archive, dest_dir / archive.stem());
    return;
  }
  std::string tmpl = (dest_dir / ("." + archive.filename().string() + ".extracting-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) fail(archive, "cannot create a folder in " + dest_dir.string() + ": " + std::strerror(errno));
  fs::path staging = tmpl;
  RemoveOnExit cleanup(staging);
  unpack_tar(archive, staging);

  // All or nothing: check every top-level target before the first rename.
  std::vector<fs::path> tops;
  for (const auto& entry : fs::directory_iterator(staging)) tops.push_back(entry.path().filename());
  for (const auto& top : tops) {
    fs::path target = dest_dir / top;
    if (fs::exists(fs::symlink_status(target)) && !(fs::is_directory(target) && fs::is_empty(target)))
      fail(archive, target.string() + " already exists; not replaced (remove it to unpack again)");
  }
  for (const auto& top : tops) {
    fs::rename(staging / top, dest_dir / top, ec);  // rename(2) replaces an empty folder
    if (ec) fail(archive, "cannot move " + top.string() + " into " + dest_dir.string() + ": " + ec.message());
  }
  fsync_dir(dest_dir);
}

void gunzip_file(const fs::path& src, const fs::path& dst) {
  Reader in(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(in.get());
  archive_read_support_format_raw(in.get());
  struct archive_entry* entry;
  if (archive_read_open_filename(in.get(), src.c_str(), 1 << 16) != ARCHIVE_OK ||
      archive_read_next_header(in.get(), &entry) != ARCHIVE_OK)
    fail(src, reason(in.get()));
  if (archive_filter_code(in.get(), 0) != ARCHIVE_FILTER_GZIP) fail(src, "not a gzip file");

  fs::path part = dst.string() + ".incomplete";
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(src, "cannot write " + part.string() + ": " + std::strerror(errno));
  RemoveOnExit cleanup(part);
  std::unique_ptr<int, void (*)(int*)> close_fd(&fd, [](int* f) { ::close(*f); });
  std::vector<char> buf(1 << 16);
  for (;;) {
    la_ssize_t n = archive_read_data(in.get(), buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) fail(src, reason(in.get()));
    for (la_ssize_t done = 0; done < n;) {
      ssize_t w = ::write(fd, buf.data() + done, std::size_t(n - done));
      if (w < 0) fail(src, "cannot write " + part.string() + ": " + std::strerror(errno));
      done += w;
    }
  }
  if (::fsync(fd) != 0) fail(src, "cannot write " + part.string() + ": " + std::strerror(errno));
  std::error_code ec;
  fs::rename(part, dst, ec);
  if (ec) fail(src, "cannot rename " + part.string() + " to " + dst.string() + ": " + ec.message());
  cleanup.release();
}

}  // namespace trainrun
