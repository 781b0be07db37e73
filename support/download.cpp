#include "support/download.h"

#include "support/curl_easy.h"
#include "support/progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace trainrun {
namespace fs = std::filesystem;

namespace {

constexpr int kResumes = 2;  // automatic resumes after the server closed early, within one call

// --- digests ---------------------------------------------------------------------------------

std::string file_digest(const fs::path& path, const EVP_MD* md) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DownloadError(path.string() + ": cannot read: " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(in.gcount()));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &n);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", out[i]);
  return hex;
}

// --- one GET into <destination>.incomplete --------------------------------------------------

struct Transfer {
  CURL* curl = nullptr;
  FILE* file = nullptr;
  std::int64_t offset = 0;  // bytes already in the file when the request was made
  std::int64_t total = -1;
  std::int64_t written = 0;
  bool started = false, refused = false;
  http::ResponseHead head;
  ByteProgress* bar = nullptr;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->started) {
    t->started = true;
    if (t->head.status >= 400) t->refused = true;
    // A server that ignores the Range answers 200 with the whole file: start over.
    if (t->head.status == 200 && t->offset > 0) {
      if (::ftruncate(::fileno(t->file), 0) != 0 || std::fseek(t->file, 0, SEEK_SET) != 0) return 0;
      t->offset = 0;
    }
    curl_off_t length = -1;
    curl_easy_getinfo(t->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length >= 0) t->total = t->offset + length;
  }
  if (t->refused) return size * n;  // an error page is not the file
  if (std::fwrite(data, size, n, t->file) != n) return 0;
  t->written += std::int64_t(size * n);
  t->bar->update(t->offset + t->written, t->total);
  return size * n;
}

struct Outcome {
  CURLcode code = CURLE_OK;
  std::string why;     // empty when the file is complete
  bool resumable = false;
};

Outcome fetch_once(const DownloadRequest& r, const fs::path& incomplete, ByteProgress& bar) {
  std::error_code ec;
  std::int64_t offset = fs::exists(incomplete, ec) ? std::int64_t(fs::file_size(incomplete, ec)) : 0;
  // A deleter type rather than decltype(&std::fclose): glibc's fclose carries attributes that a
  // template argument drops (GCC 14's -Wignored-attributes).
  struct Close {
    void operator()(FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<FILE, Close> file(std::fopen(incomplete.c_str(), offset > 0 ? "ab" : "wb"));
  if (!file) return {CURLE_WRITE_ERROR, "cannot write " + incomplete.string() + ": " + std::strerror(errno)};
  char errors[CURL_ERROR_SIZE];
  http::Headers list(nullptr, curl_slist_free_all);
  http::Curl curl = http::new_curl(r.url, r.headers, list, errors);
  Transfer t;
  t.curl = curl.get();
  t.file = file.get();
  t.offset = offset;
  t.bar = &bar;
  curl_easy_setopt(t.curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(t.curl, CURLOPT_HEADERFUNCTION, http::on_header);
  curl_easy_setopt(t.curl, CURLOPT_HEADERDATA, &t.head);
  curl_easy_setopt(t.curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(t.curl, CURLOPT_WRITEDATA, &t);
  // A plain Range header rather than CURLOPT_RESUME_FROM_LARGE: with that one curl fails the
  // transfer when the server ignores the range (200), where we want to take the whole file.
  std::string range = fmt::format("{}-", offset);
  if (offset > 0) curl_easy_setopt(t.curl, CURLOPT_RANGE, range.c_str());
  CURLcode code = curl_easy_perform(t.curl);
  bool flushed = std::fflush(t.file) == 0 && ::fsync(::fileno(t.file)) == 0;
  if (t.head.status == 416 && offset > 0) {
    // The partial file is already as long as the file (or the file changed): start over.
    file.reset();
    std::error_code ec;
    fs::remove(incomplete, ec);
    return {code, http::status_text(t.head), /*resumable=*/true};
  }
  if (t.head.status >= 400 || t.refused) return {code, http::status_text(t.head)};
  if (code != CURLE_OK) {
    // The server closed before the end: what came is kept and the next request resumes it.
    bool resumable = t.written > 0 && (code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR ||
                                       code == CURLE_OPERATION_TIMEDOUT);
    return {code, http::curl_failure(code, errors), resumable};
  }
  if (!flushed) return {CURLE_WRITE_ERROR, "cannot write " + incomplete.string() + ": " + std::strerror(errno)};
  bar.update(t.offset + t.written, t.offset + t.written, /*force=*/true);
  return {};
}

}  // namespace

// --- the node-wide lock ---------------------------------------------------------------------

FileLock::FileLock(const fs::path& path, const std::string& what, const std::string& waiting) {
  fs::create_directories(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw DownloadError(what + ": cannot create the lock " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  spdlog::info("{} (lock {})", waiting.empty() ? "Waiting for another process: " + what : waiting, path.string());
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) {
      std::string why = std::strerror(errno);
      ::close(fd_);
      throw DownloadError(what + ": cannot lock " + path.string() + ": " + why);
    }
}

FileLock::~FileLock() { ::close(fd_); }

namespace {

fs::path with_suffix(const fs::path& p, const char* suffix) {
  fs::path out = p;
  out += suffix;
  return out;
}

void verify(const DownloadRequest& r, const fs::path& incomplete, const std::string& failure_prefix) {
  auto reject = [&](const std::string& kind, const std::string& expected, const std::string& got) {
    std::error_code ec;
    fs::remove(incomplete, ec);
    throw DownloadError(failure_prefix + kind + " mismatch: expected " + expected + ", got " + got +
                        "; the partial file was removed");
  };
  if (r.size >= 0) {
    auto size = std::int64_t(fs::file_size(incomplete));
    if (size != r.size) reject("size", std::to_string(r.size) + " bytes", std::to_string(size) + " bytes");
  }
  if (!r.md5.empty()) {
    std::string got = file_md5(incomplete);
    if (got != http::lower(r.md5)) reject("md5 checksum", http::lower(r.md5), got);
  }
  if (!r.sha256.empty()) {
    std::string got = file_sha256(incomplete);
    if (got != http::lower(r.sha256)) reject("sha256 checksum", http::lower(r.sha256), got);
  }
}

}  // namespace

std::string file_md5(const fs::path& path) { return file_digest(path, EVP_md5()); }
std::string file_sha256(const fs::path& path) { return file_digest(path, EVP_sha256()); }

void download(const DownloadRequest& r) {
  if (fs::exists(r.destination)) return;
  std::string what = r.what.empty() ? r.destination.filename().string() : r.what;
  std::string prefix = what + ": cannot download " + r.url + ": ";
  std::string hint = r.offline_hint.empty() ? "" : "; " + r.offline_hint;
  std::error_code ec;
  fs::create_directories(r.destination.parent_path(), ec);
  if (ec) throw DownloadError(prefix + "cannot create " + r.destination.parent_path().string() + ": " + ec.message());

  FileLock lock(r.lock.empty() ? with_suffix(r.destination, ".lock") : r.lock, what,
                "Waiting for another process to download " + what);
  if (fs::exists(r.destination)) return;  // another process fetched it while this one waited
  spdlog::info("Downloading {} from {}", what, r.url);
  fs::path incomplete = with_suffix(r.destination, ".incomplete");
  std::int64_t first = fs::exists(incomplete, ec) ? std::int64_t(fs::file_size(incomplete, ec)) : 0;
  {
    ByteProgress bar(r.name.empty() ? r.destination.filename().string() : r.name, first);
    for (int attempt = 0;; ++attempt) {
      Outcome o = fetch_once(r, incomplete, bar);
      if (o.why.empty()) break;
      if (o.resumable && attempt < kResumes) {
        spdlog::warn("{}: the transfer stopped early ({}); resuming", what, o.why);
        continue;
      }
      // What came is kept for the next run to resume (error pages are never written).
      if (fs::exists(incomplete, ec) && fs::file_size(incomplete, ec) == 0) fs::remove(incomplete, ec);
      throw DownloadError(prefix + o.why + hint);
    }
  }
  verify(r, incomplete, prefix);
  if (std::rename(incomplete.c_str(), r.destination.c_str()) != 0)
    throw DownloadError(prefix + "cannot rename " + incomplete.string() + ": " + std::strerror(errno));
}

HttpResponse http_head(const std::string& url, const std::vector<std::string>& headers, bool follow_redirects) {
  std::vector<std::string> all = headers;
  all.push_back("Accept-Encoding: identity");  // the real size, not a compressed one
  char errors[CURL_ERROR_SIZE];
  http::Headers list(nullptr, curl_slist_free_all);
  http::Curl curl = http::new_curl(url, all, list, errors);
  http::ResponseHead head;
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 10L);  // huggingface_hub's HF_HUB_ETAG_TIMEOUT
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, http::on_header);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &head);
  CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) throw DownloadError("cannot reach " + url + ": " + http::curl_failure(code, errors));
  HttpResponse out;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &out.status);
  out.headers = std::move(head.headers);
  char* effective = nullptr;
  curl_easy_getinfo(curl.get(), CURLINFO_EFFECTIVE_URL, &effective);
  out.url = effective ? effective : url;
  return out;
}

}  // namespace trainrun
