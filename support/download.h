// Downloads users can trust (libcurl): proxies and TLS from the environment as curl does, a
// progress bar with size and rate on a terminal, a partial file resumed, the checksum verified
// before the file takes its final name (a failed or corrupt download never leaves a file a later
// run would use), one process per node downloading while the others wait, and one clear line
// on failure.
#pragma once

// HttpStream, declared here before it had a header of its own.
#include "support/http_stream.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

// What was fetched, from where, why it failed, and how to work offline. Exit code 2 before a
// run starts (nothing written), 1 after.
struct DownloadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DownloadRequest {
  std::string url;
  std::filesystem::path destination;  // the final path; written as <destination>.incomplete, then renamed
  std::string md5;                    // hex; verified before the rename when given
  std::string sha256;                 // hex; idem
  std::vector<std::string> headers;   // e.g. "Authorization: Bearer hf_..."
  std::string what;                   // for messages, e.g. "timm/resnet50d.ra2_in1k: model.safetensors"
  std::string offline_hint;           // appended to failures, e.g. "or put the file at <destination>"
  std::int64_t size = -1;             // bytes; verified before the rename when >= 0
  std::string name;                   // the progress bar's label; the destination's file name when empty
  std::filesystem::path lock;         // the node-wide lock; <destination>.lock when empty (the Hub's
                                      // cache locks under .locks/, as huggingface_hub does)
};

// Fetches request.url to request.destination unless it is already there. Follows redirects;
// resumes <destination>.incomplete with a Range request (and again, twice, when the server
// closes early); with several processes on a node only the first downloads (an flock on
// request.lock) and the others wait for the file. Throws DownloadError, one line:
// "<what>: cannot download <url>: <why>; <offline_hint>".
void download(const DownloadRequest& request);

// An exclusive flock on `path` (created with its folder) held for the object's life: one
// process per node at a time. Logs `waiting` when another process holds it. The lock file stays:
// removing it would let a third process lock a fresh inode while a second still waits on the old
// one. Throws DownloadError naming `what`.
class FileLock {
 public:
  FileLock(const std::filesystem::path& path, const std::string& what, const std::string& waiting = "");
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// A response's status and headers (names lower-cased), without its body: the Hub's metadata
// request (HEAD) before a download.
struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;
  std::string url;  // the URL that answered (after the redirects followed)
};

// HEAD `url`. Redirects are followed only when `follow_redirects` (the Hub's resolve answers
// with a redirect whose headers matter). Throws DownloadError on a transport failure (refused,
// timed out, TLS), not on an HTTP error status.
HttpResponse http_head(const std::string& url, const std::vector<std::string>& headers, bool follow_redirects);

// Hex digests of a file (OpenSSL EVP).
std::string file_md5(const std::filesystem::path& path);
std::string file_sha256(const std::filesystem::path& path);

}  // namespace trainrun
