#include "support/http_call.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "support/curl_easy.h"

namespace trainrun {
namespace {

struct CallBody {
  const std::string* text = nullptr;
  FILE* file = nullptr;
  std::int64_t left = 0;
  std::int64_t sent = 0;
};

std::size_t send_body_part(char* out, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<CallBody*>(user);
  std::size_t want = std::size_t(std::min<std::int64_t>(std::int64_t(size * n), s->left));
  std::size_t got = 0;
  if (s->file) {
    got = std::fread(out, 1, want, s->file);
    if (got < want && std::ferror(s->file)) return CURL_READFUNC_ABORT;
  } else {
    std::memcpy(out, s->text->data() + s->sent, want);
    got = want;
  }
  s->left -= std::int64_t(got);
  s->sent += std::int64_t(got);
  return got;
}

std::size_t keep_answer_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct CloseCallFile {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

HttpAnswer http_call(const HttpCall& call) {
  HttpAnswer answer;
  std::unique_ptr<FILE, CloseCallFile> file;
  CallBody source;
  source.text = &call.body;
  source.left = std::int64_t(call.body.size());
  if (!call.file.empty()) {
    file.reset(std::fopen(call.file.c_str(), "rb"));
    if (!file || std::fseek(file.get(), long(call.offset), SEEK_SET) != 0) {
      answer.failure = "cannot read " + call.file.string() + ": " + std::strerror(errno);
      return answer;
    }
    source.file = file.get();
    source.left = call.length;
  }
  std::vector<std::string> headers = call.headers;
  headers.push_back("Expect:");  // no 100-continue round trip before each body
  char errors[CURL_ERROR_SIZE];
  http::Headers list(nullptr, curl_slist_free_all);
  http::Curl curl = http::new_curl(call.url, headers, list, errors);
  CURL* c = curl.get();
  http::ResponseHead head;
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, http::on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer.body);
  if (call.method != "GET") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);  // the body from send_body_part, its length known
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, curl_off_t(source.left));
    curl_easy_setopt(c, CURLOPT_READFUNCTION, send_body_part);
    curl_easy_setopt(c, CURLOPT_READDATA, &source);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  CURLcode code = curl_easy_perform(c);
  answer.sent = source.sent;
  if (code != CURLE_OK) {
    answer.failure = http::curl_failure(code, errors);
    return answer;
  }
  answer.status = head.status;
  answer.reason = head.reason;
  answer.headers = std::move(head.headers);
  return answer;
}

}  // namespace trainrun
