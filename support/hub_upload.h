// Pushing files to a Hugging Face Hub model repository, as huggingface_hub's HfApi.create_repo +
// upload_folder do it over the LFS path (huggingface_hub/hf_api.py create_repo, create_commit;
// _commit_api.py _fetch_upload_modes, _upload_files, _send_commit; lfs.py), with HF_ENDPOINT and
// the token found as for downloads (hf_hub.h):
//   1. POST /api/repos/create (409: it exists, fine); for a revision other than main,
//      POST /api/models/ID/branch/REV (409: it exists);
//   2. POST /api/models/ID/preupload/REV: which files go by LFS, and the repository's own oid of
//      each path, so that a file the revision already holds is left out of the commit;
//   3. POST ID.git/info/lfs/objects/batch (transfers basic and multipart): an object the Hub
//      already stores comes back without actions and is not sent; the others are PUT whole, or in
//      the server's chunk_size parts followed by the completion POST; then the verify POST;
//   4. POST /api/models/ID/commit/REV: NDJSON, a header line, then a `file` line (base64) per
//      regular file and an `lfsFile` line per LFS file.
// Each request is retried on 429, 5xx and cut connections, 5 times, waiting 1, 2, 4, 8, 8 s (or
// what Retry-After says, plus 1 s), as huggingface_hub's http_backoff; a commit is retried only
// when the Hub cannot have applied it (429, 503, or no connection made).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

// One line: the repository, the step and URL, the HTTP status, the Hub's own message and what to
// do ("push to hf-hub:org/name: commit (POST ...): HTTP 412 Precondition Failed: A commit has
// happened since...; another commit reached main first: push again").
struct HubUploadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HubUploadFile {
  std::string path_in_repo;  // "model.safetensors", "last-checkpoint/optimizer.pt"
  std::filesystem::path local;
};

struct HubPush {
  std::string repo_id;  // ORG/NAME
  std::string revision = "main";
  bool private_repo = false;  // for a repository this push creates
  std::string message = "Upload with trainrun";
  std::vector<HubUploadFile> files;
  // Called before each wait between retries with the line to log (the default logs a warning).
  std::function<void(const std::string&)> on_retry;
};

struct HubPushResult {
  std::string commit_oid;  // empty when nothing changed (no commit made, as huggingface_hub)
  std::string commit_url;
  std::vector<std::string> committed;  // paths in the commit
  std::vector<std::string> unchanged;  // paths the revision already held with these bytes
  std::int64_t lfs_files_sent = 0;     // LFS objects uploaded (the Hub lacked them)
  std::int64_t lfs_bytes_sent = 0;
};

// Whether `repo_id` is ORG/NAME: one slash, text on both sides.
bool is_repo_id(const std::string& repo_id);

// Creates the repository (and branch) if needed, uploads what the Hub lacks and commits. Throws
// HubUploadError.
HubPushResult hub_push(const HubPush& push);

// Step 1 alone (push.files unused): the repository, and the branch when push.revision is not
// main, made if missing. Throws HubUploadError.
void hub_create_repo(const HubPush& push);

}  // namespace trainrun
