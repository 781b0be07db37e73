#include "support/http_stream.h"

#include "support/curl_easy.h"
#include "support/download.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace trainrun {

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
  http::ResponseHead head;
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
      http::Headers list(nullptr, curl_slist_free_all);
      std::vector<std::string> all = headers;
      all.push_back("Accept-Encoding: identity");  // byte offsets of the file itself
      http::Curl c = http::new_curl(url, all, list, errors);
      curl = c.get();
      started = refused = false;
      skip = 0;
      head = http::ResponseHead{};
      curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, http::on_header);
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
      if (head.status >= 400 || refused) return finish(url + ": " + http::status_text(head));
      if (code == CURLE_OK) return finish("");
      if (attempt >= retries)
        return finish(url + ": " + http::curl_failure(code, errors) + fmt::format(" (after {} reconnections)", attempt));
      spdlog::warn("{}: {}; reconnecting from byte {}", url, http::curl_failure(code, errors), offset + received);
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
  http::init_curl();
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
