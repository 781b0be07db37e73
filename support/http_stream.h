// A GET read as a stream (webdataset shards over HTTP): libcurl receives on a thread of its own
// and the reader takes the body in order; a broken connection is resumed from the byte where it
// broke. Errors are DownloadError (support/download.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainrun {

// A GET read as a stream, in order, as the reader asks for it: curl receives on a thread of its own
// into a bounded buffer (`buffer_bytes`), so neither the whole body nor a file is ever held. When
// the server closes before the end (or the connection breaks), the stream reconnects with
// "Range: bytes=N-" from the last byte it received, up to `retries` times a stream, waiting 0.2 s,
// 0.4 s, ... (at most 12.8 s) between tries (a server that ignores the Range answers 200: the
// bytes already had are skipped). An HTTP error status is not retried. Redirects are followed; `headers` go with every
// request (curl sends an Authorization header only to the host first asked).
class HttpStream {
 public:
  HttpStream(std::string url, std::vector<std::string> headers, std::int64_t offset = 0, int retries = 3,
             std::size_t buffer_bytes = std::size_t(4) << 20);
  ~HttpStream();
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;
  // Up to `n` bytes into `out`, waiting for at least one; 0 at the end of the body. Throws
  // DownloadError: "<url>: HTTP 404 Not Found" or curl's reason, after the retries.
  std::size_t read(char* out, std::size_t n);
  int reconnections() const;

 private:
  std::shared_ptr<void> state_;  // shared with the receiving thread (http_stream.cpp)
};

}  // namespace trainrun
