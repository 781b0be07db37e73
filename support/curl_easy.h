// libcurl as trainrun's downloads and streams use it (support/download.cpp, http_stream.cpp): one
// easy handle set up the same way for both (user agent, timeouts, a stalled server failing after
// 30 s), the last response's status line and headers, and curl's failure as one readable line.
// Internal to support/: the public headers do not expose libcurl.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace trainrun::http {

using Curl = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using Headers = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

// curl_global_init, once, before any thread of ours uses curl.
void init_curl();

// An easy handle for `url` with `headers` (kept alive in `list`) and curl's error text going to
// `errors` (CURL_ERROR_SIZE bytes).
Curl new_curl(const std::string& url, const std::vector<std::string>& headers, Headers& list, char* errors);

// The status line and headers of the last response (a redirect starts a new one).
struct ResponseHead {
  long status = 0;
  std::string reason;
  std::map<std::string, std::string> headers;  // names lower-cased
};

// CURLOPT_HEADERFUNCTION filling the ResponseHead given as CURLOPT_HEADERDATA.
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user);

// "HTTP 404 Not Found".
std::string status_text(const ResponseHead& head);

// "Couldn't connect to server (Failed to connect to 127.0.0.1 port 9 after 0 ms)": curl's text
// for the code, then its detail without the repeat.
std::string curl_failure(CURLcode code, const char* errors);

// ASCII lower case (header names, hex digests).
std::string lower(std::string s);

}  // namespace trainrun::http
