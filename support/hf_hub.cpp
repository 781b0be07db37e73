#include "support/hf_hub.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "support/download.h"

// Mirrors huggingface_hub/file_download.py (hf_hub_download, _hf_hub_download_to_cache_dir,
// get_hf_file_metadata, _create_symlink, _cache_commit_hash_for_specific_revision) and
// constants.py; the function names below say which part.

namespace trainrun {
namespace fs = std::filesystem;

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// constants._is_true
bool env_true(const char* name) {
  const char* v = env(name);
  if (!v) return false;
  std::string s = v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  return s == "1" || s == "ON" || s == "YES" || s == "TRUE";
}

fs::path expand_user(const std::string& p) {
  if (p.rfind("~", 0) != 0 || !env("HOME")) return p;
  return std::string(env("HOME")) + p.substr(1);
}

fs::path hf_home() {
  if (const char* h = env("HF_HOME")) return expand_user(h);
  fs::path cache = env("XDG_CACHE_HOME") ? fs::path(env("XDG_CACHE_HOME")) : expand_user("~/.cache");
  return cache / "huggingface";
}

bool offline() { return env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE"); }

std::string endpoint() {
  std::string e = env("HF_ENDPOINT") ? env("HF_ENDPOINT") : "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws) == std::string::npos ? s.size() : s.find_first_not_of(ws));
  return s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// utils/_auth.get_token: HF_TOKEN, then the legacy HUGGING_FACE_HUB_TOKEN, then the token file.
std::string token() {
  if (const char* t = env("HF_TOKEN")) return trim(t);
  if (const char* t = env("HUGGING_FACE_HUB_TOKEN")) return trim(t);
  fs::path file = env("HF_TOKEN_PATH") ? expand_user(env("HF_TOKEN_PATH")) : hf_home() / "token";
  std::error_code ec;
  return fs::is_regular_file(file, ec) ? trim(read_text(file)) : "";
}

bool is_commit(const std::string& revision) {
  static const std::regex hash("^[0-9a-f]{40}$");
  return std::regex_match(revision, hash);
}

// urllib.parse.quote: everything but unreserved characters (and `keep`) percent-encoded.
std::string quote(const std::string& s, const std::string& keep) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || std::string("_.-~").find(char(c)) != std::string::npos || keep.find(char(c)) != std::string::npos) {
      out += char(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// repo_folder_name: "models--timm--resnet50d.ra2_in1k".
std::string repo_folder(const std::string& repo_id) {
  std::string out = "models";
  std::stringstream parts(repo_id);
  for (std::string part; std::getline(parts, part, '/');) out += "--" + part;
  return out;
}

// "http://host:port" of a URL.
std::string origin(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  auto slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

bool has_host(const std::string& location) {
  return location.find("://") != std::string::npos || location.rfind("//", 0) == 0;
}

std::string header(const HttpResponse& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

// _normalize_etag: W/"abc" and "abc" -> abc.
std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
  return etag;
}

struct Repo {
  fs::path cache, storage;
  explicit Repo(const HubFile& f) : cache(hub_cache_dir()), storage(cache / repo_folder(f.repo_id)) {}
  fs::path pointer(const std::string& commit, const std::string& filename) const {
    return storage / "snapshots" / commit / filename;
  }
};

// _cache_commit_hash_for_specific_revision: refs/<revision> holds the commit, written atomically.
void cache_ref(const Repo& repo, const std::string& revision, const std::string& commit) {
  if (revision == commit) return;
  fs::path ref = repo.storage / "refs" / revision;
  std::error_code ec;
  if (fs::exists(ref, ec) && read_text(ref) == commit) return;
  fs::create_directories(ref.parent_path());
  fs::path tmp = ref;
  tmp += "." + std::to_string(::getpid()) + ".tmp";
  std::ofstream(tmp) << commit;
  fs::rename(tmp, ref);
}

// _create_symlink: snapshots/<commit>/<file> -> ../../blobs/<etag>, relative so that a moved cache
// still works.
void link_snapshot(const fs::path& blob, const fs::path& pointer) {
  std::error_code ec;
  fs::create_directories(pointer.parent_path());
  fs::remove(pointer, ec);
  fs::path target = fs::absolute(blob).lexically_relative(fs::absolute(pointer).parent_path());
  fs::create_symlink(target, pointer, ec);
  // Another process linked it between the remove and here (as huggingface_hub tolerates).
  if (ec && !(fs::is_symlink(pointer) && fs::equivalent(pointer, blob))) throw fs::filesystem_error("symlink", pointer, ec);
}

void tag_cache(const fs::path& cache) {
  fs::path tag = cache / "CACHEDIR.TAG";
  std::error_code ec;
  if (fs::exists(tag, ec)) return;
  std::ofstream(tag) << "Signature: 8a477f597d28d172789f06886806bc55\n"
                        "# This file is a cache directory tag created by huggingface_hub.\n"
                        "# For information about cache directory tags, see:\n"
                        "#\thttps://bford.info/cachedir/\n";
}

// What get_hf_file_metadata reads from the resolve answer.
struct Metadata {
  std::string commit, etag, location;
  std::int64_t size = -1;
};

// The HEAD of `url`, following only relative redirects (a renamed repo), never the one to the
// CDN: its headers are the ones that name the commit and the blob.
HttpResponse head_resolve(std::string url, const std::vector<std::string>& headers) {
  for (int hops = 0;; ++hops) {
    HttpResponse r = http_head(url, headers, /*follow_redirects=*/false);
    std::string location = header(r, "location");
    if (r.status < 300 || r.status > 399 || location.empty() || has_host(location) || hops == 10) return r;
    url = origin(url) + (location.front() == '/' ? "" : "/") + location;
  }
}

constexpr const char* kOfflineHint =
    "to work offline set HF_HUB_OFFLINE=1 with the file cached, or put the file on disk and name its path in "
    "model.pretrained";

}  // namespace

std::string HubFile::spec() const { return "hf-hub:" + repo_id + "@" + revision; }

std::optional<HubFile> parse_hf_hub(const std::string& text) {
  const std::string prefix = "hf-hub:";
  if (text.rfind(prefix, 0) != 0) return std::nullopt;
  std::string rest = text.substr(prefix.size());
  HubFile f;
  auto at = rest.find('@');
  f.repo_id = rest.substr(0, at);
  if (at != std::string::npos) f.revision = rest.substr(at + 1);
  // huggingface_hub's validate_repo_id: [namespace/]name of word characters, '-' and '.'.
  static const std::regex repo("^([A-Za-z0-9_.-]+/)?[A-Za-z0-9_.-]+$");
  bool ok = std::regex_match(f.repo_id, repo) && f.repo_id.find("--") == std::string::npos &&
            f.repo_id.find("..") == std::string::npos && f.repo_id.size() <= 96 && !f.revision.empty() &&
            f.revision.find('@') == std::string::npos;
  if (!ok) throw std::invalid_argument(text + ": expected hf-hub:<org>/<name> or hf-hub:<org>/<name>@<revision>");
  return f;
}

fs::path hub_cache_dir() {
  if (const char* c = env("HF_HUB_CACHE")) return expand_user(c);
  if (const char* c = env("HUGGINGFACE_HUB_CACHE")) return expand_user(c);
  return hf_home() / "hub";
}

std::optional<fs::path> hub_cached(const HubFile& f) {
  Repo repo(f);
  std::string commit = f.revision;
  std::error_code ec;
  fs::path ref = repo.storage / "refs" / f.revision;
  if (!is_commit(commit)) {
    if (!fs::is_regular_file(ref, ec)) return std::nullopt;
    commit = trim(read_text(ref));
  }
  fs::path pointer = repo.pointer(commit, f.filename);
  if (fs::is_regular_file(pointer, ec)) return pointer;
  return std::nullopt;
}

std::string hub_url(const HubFile& f) {
  return endpoint() + "/" + f.repo_id + "/resolve/" + quote(f.revision, "") + "/" + quote(f.filename, "/");
}

namespace {

// Like _get_metadata_or_catch_error: when the Hub cannot answer (down, unreachable, refusing
// this token), the revision's cached file is used; the error is raised only without one.
fs::path cached_or_throw(const HubFile& f, const std::string& what, const std::string& why, const std::string& hint) {
  if (auto cached = hub_cached(f)) {
    spdlog::warn("{}: {}; using the cached {}", what, why, cached->string());
    return *cached;
  }
  throw DownloadError(what + ": " + why + (hint.empty() ? "" : "; " + hint));
}

// The Hub's answer to HEAD on the resolve URL as Metadata; nullopt with `fallback` set to the
// cached file when the Hub could not answer but the revision is cached. Throws otherwise.
std::optional<Metadata> hub_metadata(const HubFile& f, const Repo& repo, const std::string& url,
                                     const std::vector<std::string>& headers, fs::path& fallback) {
  const std::string what = f.spec() + ": " + f.filename;
  const bool token = !headers.empty();
  HttpResponse r;
  try {
    r = head_resolve(url, headers);
  } catch (const DownloadError& e) {
    fallback = cached_or_throw(f, what, e.what(), kOfflineHint);
    return std::nullopt;
  }
  std::string code = header(r, "x-error-code"), commit = header(r, "x-repo-commit");
  if (code == "EntryNotFound" && is_commit(commit)) {
    // As huggingface_hub: the file's absence at that commit is remembered in .no_exist/.
    std::error_code ec;
    fs::path marker = repo.storage / ".no_exist" / commit / f.filename;
    fs::create_directories(marker.parent_path(), ec);
    std::ofstream{marker};
    cache_ref(repo, f.revision, commit);
  }
  std::string why;
  std::string hint = kOfflineHint;
  if (code == "EntryNotFound" || code == "RevisionNotFound")
    throw DownloadError(what + ": repository or file not found: " + url);
  if (code == "RepoNotFound" || r.status == 404) {
    why = "repository or file not found: " + url;
    hint = token ? "" : "if it is private, set HF_TOKEN";
  } else if (r.status == 401 || r.status == 403 || code == "GatedRepo") {
    why = "gated or private (HTTP " + std::to_string(r.status) + "): " +
          (token ? "the token (HF_TOKEN) has no access to " + f.repo_id + "; request it on its page"
                 : "set HF_TOKEN to a token with access to " + f.repo_id);
    hint = "";
  } else if (r.status >= 400) {
    why = "cannot download " + url + ": HTTP " + std::to_string(r.status);
  }
  Metadata m;
  if (why.empty()) {
    m.commit = commit;
    m.etag = normalize_etag(header(r, "x-linked-etag").empty() ? header(r, "etag") : header(r, "x-linked-etag"));
    bool redirect = r.status >= 300 && r.status <= 399;
    m.location = redirect && !header(r, "location").empty() ? header(r, "location") : r.url;
    std::string size = header(r, "x-linked-size").empty() && !redirect ? header(r, "content-length") : header(r, "x-linked-size");
    if (!size.empty()) m.size = std::strtoll(size.c_str(), nullptr, 10);
    if (m.commit.empty() || m.etag.empty() || m.size < 0)
      why = url + " did not answer as the Hugging Face Hub does (no X-Repo-Commit, ETag or size); check HF_ENDPOINT "
                  "and the proxy settings";
  }
  if (why.empty()) return m;
  fallback = cached_or_throw(f, what, why, hint);
  return std::nullopt;
}

// The blob into blobs/<etag> (its SHA-256 checked when the etag is one), then the snapshot link.
fs::path fetch_into_cache(const HubFile& f, const Repo& repo, const Metadata& m, const std::string& url,
                          const std::vector<std::string>& headers) {
  fs::path blob = repo.storage / "blobs" / m.etag;
  fs::path pointer = repo.pointer(m.commit, f.filename);
  if (fs::exists(pointer)) {
    try {
      cache_ref(repo, f.revision, m.commit);
    } catch (const fs::filesystem_error&) {  // a read-only cache is fine for reading
    }
    return pointer;
  }
  fs::create_directories(blob.parent_path());
  tag_cache(repo.cache);
  cache_ref(repo, f.revision, m.commit);

  DownloadRequest d;
  d.url = m.location;
  d.destination = blob;
  d.size = m.size;
  static const std::regex sha256("^[0-9a-f]{64}$");
  if (std::regex_match(m.etag, sha256)) d.sha256 = m.etag;
  // The CDN's URL is signed: the token goes only to the Hub itself.
  if (origin(m.location) == origin(url)) d.headers = headers;
  d.what = f.spec() + ": " + f.filename;
  d.name = f.filename;
  d.offline_hint = kOfflineHint;
  d.lock = repo.cache / ".locks" / repo_folder(f.repo_id) / (m.etag + ".lock");
  download(d);
  if (!fs::exists(pointer)) link_snapshot(blob, pointer);
  return pointer;
}

}  // namespace

fs::path hf_hub_download(const HubFile& f) {
  Repo repo(f);
  std::string what = f.spec() + ": " + f.filename;
  fs::path rel = fs::path(f.filename).lexically_normal();
  if (f.filename.empty() || rel.is_absolute() || *rel.begin() == "..")
    throw DownloadError(what + ": not a file name inside the repository");
  // A commit already in the cache needs no request at all.
  if (is_commit(f.revision) && fs::exists(repo.pointer(f.revision, f.filename))) return repo.pointer(f.revision, f.filename);
  if (offline()) {
    if (auto cached = hub_cached(f)) return *cached;
    throw DownloadError(what + " is not in the cache (" + repo.cache.string() + ") and HF_HUB_OFFLINE is set");
  }
  std::string url = hub_url(f);
  std::vector<std::string> headers;
  if (std::string tok = token(); !tok.empty()) headers.push_back("Authorization: Bearer " + tok);
  fs::path fallback;
  std::optional<Metadata> m = hub_metadata(f, repo, url, headers, fallback);
  return m ? fetch_into_cache(f, repo, *m, url, headers) : fallback;
}

std::string hub_endpoint() { return endpoint(); }

std::string hub_token() { return token(); }

bool hub_offline() { return offline(); }

}  // namespace trainrun
