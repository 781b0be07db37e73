#include "support/curl_easy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace trainrun::http {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

void init_curl() {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
}

Curl new_curl(const std::string& url, const std::vector<std::string>& headers, Headers& list, char* errors) {
  init_curl();
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

std::string status_text(const ResponseHead& head) {
  return head.reason.empty() ? fmt::format("HTTP {}", head.status) : fmt::format("HTTP {} {}", head.status, head.reason);
}

std::string curl_failure(CURLcode code, const char* errors) {
  std::string text = curl_easy_strerror(code), detail = errors;
  std::string repeat = ": " + text;
  if (detail.size() >= repeat.size() && detail.compare(detail.size() - repeat.size(), repeat.size(), repeat) == 0)
    detail.resize(detail.size() - repeat.size());
  return detail.empty() || detail == text ? text : text + " (" + detail + ")";
}

}  // namespace trainrun::http
