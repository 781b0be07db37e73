#include "support/hub_upload.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/hf_hub.h"
#include "support/http_call.h"

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Context {
  const HubPush& push;
  std::string endpoint, token, label, revision;  // revision URL-quoted
};

// urllib.parse.quote(s, safe=""), for a revision in a path.
std::string quote(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += char(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

HttpCall request(const std::string& method, const std::string& url, std::vector<std::string> headers, std::string body) {
  HttpCall call;
  call.method = method;
  call.url = url;
  call.headers = std::move(headers);
  call.body = std::move(body);
  return call;
}

std::vector<std::string> auth(const Context& cx, std::vector<std::string> headers = {}) {
  if (!cx.token.empty()) headers.push_back("Authorization: Bearer " + cx.token);
  return headers;
}

// The Hub's own words: X-Error-Message, else the JSON body's "error", else the body's first line.
std::string server_message(const HttpAnswer& a) {
  if (auto it = a.headers.find("x-error-message"); it != a.headers.end() && !it->second.empty()) return it->second;
  json body = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) return body["error"].get<std::string>();
  std::string text = a.body.substr(0, a.body.find('\n'));
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

std::string hint(const Context& cx, long status) {
  switch (status) {
    case 401:
      return cx.token.empty() ? "no token: set HF_TOKEN to a token with write access"
                              : "the Hub did not accept the token (HF_TOKEN or $HF_HOME/token): give one with write access";
    case 403: return "the token cannot write to " + cx.push.repo_id + ": give a write token of its owner or organisation";
    case 404: return "no repository " + cx.push.repo_id + " or revision " + cx.push.revision + " that this token can see";
    case 409:
    case 412: return "another commit reached " + cx.push.revision + " first: push again (uploaded files are not sent twice)";
    case 413: return "the Hub refuses a request this large";
    case 429: return "rate limited: wait and push again";
    default: return status >= 500 ? "the Hub failed; push again later" : "";
  }
}

[[noreturn]] void fail(const Context& cx, const std::string& step, const HttpCall& call, const HttpAnswer& a) {
  std::string what = a.status == 0 ? a.failure : fmt::format("HTTP {}{}", a.status, a.reason.empty() ? "" : " " + a.reason);
  if (a.status != 0) {
    std::string message = server_message(a);
    while (!message.empty() && (message.back() == '.' || message.back() == ' ')) message.pop_back();
    if (!message.empty()) what += ": " + message;
  }
  std::string h = a.status == 0 ? "the Hub could not be reached; push again later" : hint(cx, a.status);
  throw HubUploadError(fmt::format("push to {}: {} ({} {}): {}{}", cx.label, step, call.method, call.url, what,
                                   h.empty() ? "" : "; " + h));
}

bool transient(const HttpAnswer& a) {
  return a.status == 0 || a.status == 429 || a.status == 500 || a.status == 502 || a.status == 503 || a.status == 504;
}

// http_backoff: min(1 s x 2^attempt, 8 s), or Retry-After + 1 s.
double wait_seconds(const HttpAnswer& a, int attempt) {
  if (auto it = a.headers.find("retry-after"); it != a.headers.end()) {
    char* end = nullptr;
    long s = std::strtol(it->second.c_str(), &end, 10);
    if (end != it->second.c_str() && *end == '\0' && s >= 0) return double(s) + 1;
  }
  return std::min(8.0, double(1 << attempt));
}

// Sends with retries. `commit`: retried only when the Hub cannot have applied it.
HttpAnswer send(const Context& cx, const std::string& step, const HttpCall& call, bool commit = false) {
  constexpr int kRetries = 5;
  for (int attempt = 0;; ++attempt) {
    HttpAnswer a = http_call(call);
    bool retry = transient(a) && (!commit || a.status == 429 || a.status == 503 || a.sent == 0);
    if (!retry || attempt == kRetries) return a;
    const double wait = wait_seconds(a, attempt);
    std::string line = fmt::format("push to {}: {}: {}; retrying in {:g} s ({}/{})", cx.label, step,
                                   a.status == 0 ? a.failure : fmt::format("HTTP {}", a.status), wait, attempt + 1, kRetries);
    cx.push.on_retry ? cx.push.on_retry(line) : spdlog::warn("{}", line);
    std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(wait * 1000)));
  }
}

// POSTs JSON; fails unless 2xx or one of `also`.
HttpAnswer post_json(const Context& cx, const std::string& step, const std::string& url, const json& body,
                     std::vector<std::string> headers, std::initializer_list<long> also = {}) {
  headers.push_back("Content-Type: application/json");
  HttpCall call = request("POST", url, std::move(headers), body.dump());
  HttpAnswer a = send(cx, step, call);
  if (a.status / 100 != 2 && std::find(also.begin(), also.end(), a.status) == also.end()) fail(cx, step, call, a);
  return a;
}

json parse(const Context& cx, const std::string& step, const HttpAnswer& a) {
  json j = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw HubUploadError(fmt::format("push to {}: {}: the Hub's answer is not JSON: {}", cx.label, step, a.body.substr(0, 200)));
  return j;
}

void create_repo(const Context& cx) {
  const auto slash = cx.push.repo_id.find('/');
  json body = {{"name", cx.push.repo_id.substr(slash + 1)}, {"organization", cx.push.repo_id.substr(0, slash)}, {"type", "model"}};
  if (cx.push.private_repo) body["visibility"] = "private";
  post_json(cx, "create the repository", cx.endpoint + "/api/repos/create", body, auth(cx), {409});
  if (cx.push.revision != "main")
    post_json(cx, "create the branch " + cx.push.revision,
              cx.endpoint + "/api/models/" + cx.push.repo_id + "/branch/" + cx.revision, json::object(), auth(cx), {409});
}

// --- what each file is -------------------------------------------------------------------------

struct Local {
  const HubUploadFile* file = nullptr;
  std::int64_t size = 0;
  std::string sample;  // the first 512 bytes
  bool lfs = false;
  std::string sha256;      // hex, for LFS files
  std::string remote_oid;  // the revision's oid of the path; empty when it has none
};

std::string hex(const unsigned char* p, unsigned n) {
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += fmt::format("{:02x}", p[i]);
  return out;
}

// sha256 of the file, or (git) sha1 of "blob SIZE\0" + the file: the oid preupload compares with.
std::string file_oid(const Local& l, bool git_sha1) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), git_sha1 ? EVP_sha1() : EVP_sha256(), nullptr);
  if (git_sha1) {
    std::string head = fmt::format("blob {}", l.size);
    EVP_DigestUpdate(ctx.get(), head.c_str(), head.size() + 1);
  }
  std::ifstream in(l.file->local, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(in.gcount()));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &n);
  return hex(out, n);
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(data.data()),
                          int(data.size()));
  out.resize(std::size_t(n));
  return out;
}

std::vector<Local> read_locals(const Context& cx) {
  std::vector<Local> out;
  for (const auto& f : cx.push.files) {
    std::error_code ec;
    Local l;
    l.file = &f;
    l.size = std::int64_t(fs::file_size(f.local, ec));
    if (ec) throw HubUploadError(fmt::format("push to {}: {}: {}", cx.label, f.local.string(), ec.message()));
    std::ifstream in(f.local, std::ios::binary);
    l.sample.resize(512);
    in.read(l.sample.data(), 512);
    l.sample.resize(std::size_t(in.gcount()));
    out.push_back(std::move(l));
  }
  return out;
}

// _fetch_upload_modes, 256 files a request.
void preupload(const Context& cx, std::vector<Local>& locals) {
  for (std::size_t first = 0; first < locals.size(); first += 256) {
    json files = json::array();
    for (std::size_t i = first; i < std::min(locals.size(), first + 256); ++i)
      files.push_back({{"path", locals[i].file->path_in_repo}, {"sample", base64(locals[i].sample)}, {"size", locals[i].size}});
    const std::string url = cx.endpoint + "/api/models/" + cx.push.repo_id + "/preupload/" + cx.revision;
    json answer = parse(cx, "preupload", post_json(cx, "preupload", url, {{"files", files}}, auth(cx)));
    for (const auto& f : answer.value("files", json::array())) {
      for (std::size_t i = first; i < std::min(locals.size(), first + 256); ++i) {
        if (locals[i].file->path_in_repo != f.value("path", "")) continue;
        locals[i].lfs = f.value("uploadMode", "regular") == "lfs" && locals[i].size > 0;  // empty files go regular
        locals[i].remote_oid = f.contains("oid") && f["oid"].is_string() ? f["oid"].get<std::string>() : "";
      }
    }
  }
}

// --- LFS ---------------------------------------------------------------------------------------

const std::vector<std::string> kLfsHeaders{"Accept: application/vnd.git-lfs+json",
                                           "Content-Type: application/vnd.git-lfs+json"};

// PUTs [offset, offset + length) of the file to `url` (a presigned URL: no token); its ETag.
std::string put_part(const Context& cx, const Local& l, const std::string& url, std::int64_t offset, std::int64_t length,
                     const std::string& step) {
  HttpCall call = request("PUT", url, {}, "");
  call.file = l.file->local;
  call.offset = offset;
  call.length = length;
  HttpAnswer a = send(cx, step, call);
  if (a.status / 100 != 2) fail(cx, step, call, a);
  auto it = a.headers.find("etag");
  return it == a.headers.end() ? "" : it->second;
}

// lfs.py _upload_multi_part: the numbered part URLs of the upload action's header, one chunk_size
// slice each, then the completion POST.
void upload_multipart(const Context& cx, const Local& l, const json& upload, std::int64_t chunk) {
  const std::string step = "upload " + l.file->path_in_repo;
  std::vector<std::pair<long, std::string>> urls;
  for (const auto& [key, value] : upload["header"].items())
    if (!key.empty() && std::all_of(key.begin(), key.end(), ::isdigit)) urls.emplace_back(std::stol(key), value.get<std::string>());
  std::sort(urls.begin(), urls.end());
  if (chunk <= 0 || std::int64_t(urls.size()) != (l.size + chunk - 1) / chunk)
    throw HubUploadError(fmt::format("push to {}: {}: the Hub gave {} part URLs for {} bytes in chunks of {}", cx.label, step,
                                     urls.size(), l.size, chunk));
  json parts = json::array();
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const std::int64_t offset = std::int64_t(i) * chunk;
    std::string etag = put_part(cx, l, urls[i].second, offset, std::min(chunk, l.size - offset),
                                fmt::format("{} (part {} of {})", step, i + 1, urls.size()));
    if (etag.empty()) throw HubUploadError(fmt::format("push to {}: {}: part {} came back without an ETag", cx.label, step, i + 1));
    parts.push_back({{"partNumber", i + 1}, {"etag", etag}});
  }
  post_json(cx, step + " (completion)", upload["href"].get<std::string>(), {{"oid", l.sha256}, {"parts", parts}},
            {"Accept: application/vnd.git-lfs+json"});
}

void upload_object(const Context& cx, const Local& l, const json& actions) {
  const json& upload = actions.at("upload");
  const json header = upload.value("header", json::object());
  if (header.contains("chunk_size")) {
    const json& c = header["chunk_size"];
    upload_multipart(cx, l, upload, c.is_string() ? std::stoll(c.get<std::string>()) : c.get<std::int64_t>());
  } else {
    put_part(cx, l, upload["href"].get<std::string>(), 0, l.size, "upload " + l.file->path_in_repo);
  }
  if (actions.contains("verify"))
    post_json(cx, "verify " + l.file->path_in_repo, actions["verify"]["href"].get<std::string>(),
              {{"oid", l.sha256}, {"size", l.size}}, auth(cx));
}

// _upload_files' LFS path: the batch request, then each object the Hub asks for.
void upload_lfs(const Context& cx, const std::vector<const Local*>& todo, HubPushResult& result) {
  for (std::size_t first = 0; first < todo.size(); first += 256) {
    json objects = json::array();
    for (std::size_t i = first; i < std::min(todo.size(), first + 256); ++i)
      objects.push_back({{"oid", todo[i]->sha256}, {"size", todo[i]->size}});
    json body = {{"operation", "upload"}, {"transfers", {"basic", "multipart"}}, {"objects", objects},
                 {"hash_algo", "sha256"}, {"ref", {{"name", cx.push.revision}}}};
    const std::string url = cx.endpoint + "/" + cx.push.repo_id + ".git/info/lfs/objects/batch";
    HttpCall call = request("POST", url, auth(cx, kLfsHeaders), body.dump());
    HttpAnswer a = send(cx, "LFS batch", call);
    if (a.status / 100 != 2) fail(cx, "LFS batch", call, a);
    for (const auto& o : parse(cx, "LFS batch", a).value("objects", json::array())) {
      if (o.contains("error"))
        throw HubUploadError(fmt::format("push to {}: LFS batch: object {}: {}", cx.label, o.value("oid", "?"),
                                         o["error"].value("message", o["error"].dump())));
      if (!o.contains("actions")) continue;  // the Hub already stores it
      auto it = std::find_if(todo.begin(), todo.end(), [&](const Local* l) { return l->sha256 == o.value("oid", ""); });
      if (it == todo.end()) continue;
      upload_object(cx, **it, o["actions"]);
      result.lfs_files_sent += 1;
      result.lfs_bytes_sent += (*it)->size;
    }
  }
}

// --- the commit --------------------------------------------------------------------------------

void commit(const Context& cx, const std::vector<const Local*>& changed, HubPushResult& result) {
  std::string ndjson = json{{"key", "header"}, {"value", {{"summary", cx.push.message}, {"description", ""}}}}.dump() + "\n";
  for (const Local* l : changed) {
    const std::string& path = l->file->path_in_repo;
    json line = l->lfs ? json{{"key", "lfsFile"}, {"value", {{"path", path}, {"algo", "sha256"}, {"oid", l->sha256}, {"size", l->size}}}}
                       : json{{"key", "file"}, {"value", {{"content", base64(read_all(l->file->local))}, {"path", path}, {"encoding", "base64"}}}};
    ndjson += line.dump() + "\n";
    result.committed.push_back(path);
  }
  const std::string url = cx.endpoint + "/api/models/" + cx.push.repo_id + "/commit/" + cx.revision;
  HttpCall call = request("POST", url, auth(cx, {"Content-Type: application/x-ndjson"}), ndjson);
  HttpAnswer a = send(cx, "commit", call, /*commit=*/true);
  if (a.status / 100 != 2) fail(cx, "commit", call, a);
  json answer = parse(cx, "commit", a);
  result.commit_oid = answer.value("commitOid", "");
  result.commit_url = answer.value("commitUrl", "");
}

Context context_of(const HubPush& push) {
  if (!is_repo_id(push.repo_id))
    throw HubUploadError("push: repository " + push.repo_id + ": expected ORG/NAME");
  Context cx{push, hub_endpoint(), hub_token(), "hf-hub:" + push.repo_id, quote(push.revision)};
  if (push.revision != "main") cx.label += "@" + push.revision;
  return cx;
}

}  // namespace

bool is_repo_id(const std::string& repo_id) {
  const auto slash = repo_id.find('/');
  return slash != std::string::npos && slash != 0 && slash + 1 != repo_id.size() &&
         repo_id.find('/', slash + 1) == std::string::npos;
}

void hub_create_repo(const HubPush& push) { create_repo(context_of(push)); }

HubPushResult hub_push(const HubPush& push) {
  const Context cx = context_of(push);
  std::vector<Local> locals = read_locals(cx);
  create_repo(cx);
  preupload(cx, locals);
  HubPushResult result;
  std::vector<const Local*> changed, lfs;
  for (Local& l : locals) {
    if (l.lfs) l.sha256 = file_oid(l, /*git_sha1=*/false);
    const std::string local_oid = l.lfs ? l.sha256 : file_oid(l, /*git_sha1=*/true);
    if (!l.remote_oid.empty() && l.remote_oid == local_oid) {
      result.unchanged.push_back(l.file->path_in_repo);
      continue;
    }
    changed.push_back(&l);
    if (l.lfs) lfs.push_back(&l);
  }
  upload_lfs(cx, lfs, result);
  if (!changed.empty()) commit(cx, changed, result);
  return result;
}

}  // namespace trainrun
