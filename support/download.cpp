#include "support/download.h"

#include "support/progress.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cerrno>
#include <chrono>
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

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// --- libcurl plumbing -----------------------------------------------------------------------

using Curl = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using Headers = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

Curl new_curl(const std::string& url, const std::vector<std::string>& headers, Headers& list, char* errors) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  Curl curl(curl_easy_init(), curl_easy_cleanup);
  for (const auto& h : headers) list.reset(curl_slist_append(list.release(), h.c_str()));
  errors[0] = '\0';
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errors);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "trainrun/" TRAINRUN_VERSION);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  // A server that stops sending fails after 30 s instead of hanging the job.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  return curl;
}

// The status line and headers of the last response (a redirect starts a new one).
struct ResponseHead {
  long status = 0;
  std::string reason;
  std::map<std::string, std::string> headers;
};

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* head = static_cast<ResponseHead*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    *head = ResponseHead{};
    auto sp = line.find(' ');
    if (sp != std::string::npos) {
      head->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
      auto sp2 = line.find(' ', sp + 1);
      if (sp2 != std::string::npos) head->reason = line.substr(sp2 + 1);
    }
  } else if (auto colon = line.find(':'); colon != std::string::npos) {
    std::size_t v = line.find_first_not_of(" \t", colon + 1);
    head->headers[lower(line.substr(0, colon))] = v == std::string::npos ? "" : line.substr(v);
  }
  return size * n;
}

std::string http_status_text(const ResponseHead& head) {
  return head.reason.empty() ? fmt::format("HTTP {}", head.status) : fmt::format("HTTP {} {}", head.status, head.reason);
}

// "Couldn't connect to server (Failed to connect to 127.0.0.1 port 9 after 0 ms)": curl's text
// for the code, then its detail without the repeat.
std::string curl_failure(CURLcode code, const char* errors) {
  std::string text = curl_easy_strerror(code), detail = errors;
  std::string repeat = ": " + text;
  if (detail.size() >= repeat.size() && detail.compare(detail.size() - repeat.size(), repeat.size(), repeat) == 0)
    detail.resize(detail.size() - repeat.size());
  return detail.empty() || detail == text ? text : text + " (" + detail + ")";
}

// --- one GET into <destination>.incomplete --------------------------------------------------

struct Transfer {
  CURL* curl = nullptr;
  FILE* file = nullptr;
  std::int64_t offset = 0;  // bytes already in the file when the request was made
  std::int64_t total = -1;
  std::int64_t written = 0;
  bool started = false, refused = false;
  ResponseHead head;
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
  Headers list(nullptr, curl_slist_free_all);
  Curl curl = new_curl(r.url, r.headers, list, errors);
  Transfer t;
  t.curl = curl.get();
  t.file = file.get();
  t.offset = offset;
  t.bar = &bar;
  curl_easy_setopt(t.curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(t.curl, CURLOPT_HEADERFUNCTION, on_header);
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
    return {code, http_status_text(t.head), /*resumable=*/true};
  }
  if (t.head.status >= 400 || t.refused) return {code, http_status_text(t.head)};
  if (code != CURLE_OK) {
    // The server closed before the end: what came is kept and the next request resumes it.
    bool resumable = t.written > 0 && (code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR ||
                                       code == CURLE_OPERATION_TIMEDOUT);
    return {code, curl_failure(code, errors), resumable};
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
    if (got != lower(r.md5)) reject("md5 checksum", lower(r.md5), got);
  }
  if (!r.sha256.empty()) {
    std::string got = file_sha256(incomplete);
    if (got != lower(r.sha256)) reject("sha256 checksum", lower(r.sha256), got);
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
  Headers list(nullptr, curl_slist_free_all);
  Curl curl = new_curl(url, all, list, errors);
  ResponseHead head;
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 10L);  // huggingface_hub's HF_HUB_ETAG_TIMEOUT
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &head);
  CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) throw DownloadError("cannot reach " + url + ": " + curl_failure(code, errors));
  HttpResponse out;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &out.status);
  out.headers = std::move(head.headers);
  char* effective = nullptr;
  curl_easy_getinfo(curl.get(), CURLINFO_EFFECTIVE_URL, &effective);
  out.url = effective ? effective : url;
  return out;
}

// --- a GET as a stream --------------------------------------------------------------------------

namespace {

struct HttpStreamState {
  std::string url;
  std::vector<std::string> headers;
  std::int64_t offset = 0;
  int retries = 0;
  std::size_t capacity = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> chunks;  // received, not yet read
  std::size_t buffered = 0;
  std::size_t front_used = 0;  // bytes of chunks.front() already read
  bool finished = false, stop = false;
  std::string error;
  int reconnections = 0;

  // The receiving thread's own.
  std::int64_t received = 0;  // bytes after `offset` put in the buffer, over every attempt
  std::int64_t skip = 0;      // bytes of this response to drop (a server that ignored the Range)
  bool started = false, refused = false;
  ResponseHead head;
  CURL* curl = nullptr;

  void finish(std::string why) {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    error = std::move(why);
    cv.notify_all();
  }

  static std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
    auto* s = static_cast<HttpStreamState*>(user);
    std::size_t bytes = size * n;
    if (!s->started) {
      s->started = true;
      if (s->head.status >= 400) s->refused = true;
      if (s->head.status == 200 && s->offset + s->received > 0) s->skip = s->offset + s->received;
    }
    if (s->refused) return bytes;  // an error page is not the body
    std::size_t drop = std::size_t(std::min<std::int64_t>(s->skip, std::int64_t(bytes)));
    s->skip -= std::int64_t(drop);
    if (drop == bytes) return bytes;
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [s] { return s->stop || s->buffered < s->capacity; });
    if (s->stop) return 0;  // aborts the transfer
    s->chunks.emplace_back(data + drop, bytes - drop);
    s->buffered += bytes - drop;
    s->received += std::int64_t(bytes - drop);
    s->cv.notify_all();
    return bytes;
  }

  void run() {
    for (int attempt = 0;; ++attempt) {
      char errors[CURL_ERROR_SIZE];
      Headers list(nullptr, curl_slist_free_all);
      std::vector<std::string> all = headers;
      all.push_back("Accept-Encoding: identity");  // byte offsets of the file itself
      Curl c = new_curl(url, all, list, errors);
      curl = c.get();
      started = refused = false;
      skip = 0;
      head = ResponseHead{};
      curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt(curl, CURLOPT_HEADERDATA, &head);
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
      curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
      const std::int64_t from = offset + received;
      std::string range = fmt::format("{}-", from);
      if (from > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
      CURLcode code = curl_easy_perform(curl);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) return;
      }
      if (head.status >= 400 || refused) return finish(url + ": " + http_status_text(head));
      if (code == CURLE_OK) return finish("");
      if (attempt >= retries)
        return finish(url + ": " + curl_failure(code, errors) + fmt::format(" (after {} reconnections)", attempt));
      spdlog::warn("{}: {}; reconnecting from byte {}", url, curl_failure(code, errors), offset + received);
      {
        std::unique_lock<std::mutex> lock(mu);
        ++reconnections;
        if (cv.wait_for(lock, std::chrono::milliseconds(200 << std::min(attempt, 6)), [this] { return stop; })) return;
      }
    }
  }
};

}  // namespace

HttpStream::HttpStream(std::string url, std::vector<std::string> headers, std::int64_t offset, int retries,
                       std::size_t buffer_bytes)
    : state_(std::make_shared<HttpStreamState>()) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  auto s = std::static_pointer_cast<HttpStreamState>(state_);
  s->url = std::move(url);
  s->headers = std::move(headers);
  s->offset = offset;
  s->retries = retries;
  s->capacity = std::max<std::size_t>(buffer_bytes, 1);
  std::thread([s] { s->run(); }).detach();
}

// The receiving thread holds the state too: told to stop, it returns at its next callback (or
// when curl's own timeouts end a stalled connection) without anyone waiting for it.
HttpStream::~HttpStream() {
  auto* s = static_cast<HttpStreamState*>(state_.get());
  std::lock_guard<std::mutex> lock(s->mu);
  s->stop = true;
  s->cv.notify_all();
}

std::size_t HttpStream::read(char* out, std::size_t n) {
  HttpStreamState& s = *static_cast<HttpStreamState*>(state_.get());
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return !s.chunks.empty() || s.finished; });
  if (s.chunks.empty()) {
    if (!s.error.empty()) throw DownloadError(s.error);
    return 0;
  }
  std::size_t done = 0;
  while (done < n && !s.chunks.empty()) {
    const std::string& front = s.chunks.front();
    std::size_t take = std::min(n - done, front.size() - s.front_used);
    std::memcpy(out + done, front.data() + s.front_used, take);
    done += take;
    s.front_used += take;
    if (s.front_used == front.size()) {
      s.buffered -= front.size();
      s.chunks.pop_front();
      s.front_used = 0;
    }
  }
  s.cv.notify_all();
  return done;
}

int HttpStream::reconnections() const {
  auto* s = static_cast<HttpStreamState*>(state_.get());
  std::lock_guard<std::mutex> lock(s->mu);
  return s->reconnections;
}

}  // namespace trainrun
