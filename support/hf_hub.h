// Pretrained weights from the Hugging Face Hub, cached exactly as Python's
// huggingface_hub.hf_hub_download caches them, so a file a Python user (timm, transformers)
// downloaded is reused here and the other way round:
//
//   $HF_HUB_CACHE/models--timm--resnet50d.ra2_in1k/
//     blobs/<etag>                                  the bytes (an LFS etag is their sha256)
//     snapshots/<commit>/model.safetensors          -> ../../blobs/<etag> (relative symlink)
//     refs/main                                     <commit>, for a branch or tag revision
//   $HF_HUB_CACHE/.locks/models--timm--resnet50d.ra2_in1k/<etag>.lock
//
// The same environment as Python: HF_HOME (~/.cache/huggingface), HF_HUB_CACHE ($HF_HOME/hub),
// HF_ENDPOINT (https://huggingface.co), HF_HUB_OFFLINE, HF_TOKEN (or the file $HF_HOME/token).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace trainrun {

// `hf-hub:<org>/<name>[@<revision>]`, timm's spelling of a Hub model.
struct HubFile {
  std::string repo_id;
  std::string filename = "model.safetensors";
  std::string revision = "main";
  std::string spec() const;  // "hf-hub:timm/resnet50d.ra2_in1k@main", for messages
};

// nullopt when `text` does not start with "hf-hub:"; std::invalid_argument when it does but is
// malformed.
std::optional<HubFile> parse_hf_hub(const std::string& text);

// HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub (HF_HOME: $XDG_CACHE_HOME/huggingface
// or ~/.cache/huggingface), as huggingface_hub.constants.
std::filesystem::path hub_cache_dir();

// The cached file, fetched first when the cache lacks it for the revision's current commit. One
// metadata request (HEAD) when online; none when HF_HUB_OFFLINE is set or the revision is a
// cached commit. When the Hub cannot be reached (or refuses), the cached file of the revision is
// used if there is one. Returns snapshots/<commit>/<filename>, a symlink into blobs/. Throws
// DownloadError.
std::filesystem::path hf_hub_download(const HubFile& f);

// The resolve URL the file is fetched from: {HF_ENDPOINT}/{repo_id}/resolve/{revision}/{filename}.
std::string hub_url(const HubFile& f);

// No request: the cached file for the revision (refs/<revision> or the commit itself), if any,
// as huggingface_hub.try_to_load_from_cache.
std::optional<std::filesystem::path> hub_cached(const HubFile& f);

// HF_ENDPOINT without a trailing slash (https://huggingface.co by default); the token as
// huggingface_hub finds it (HF_TOKEN, HUGGING_FACE_HUB_TOKEN, then $HF_HOME/token), empty without
// one; whether HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set. For other files of the Hub
// (dataset shards) fetched with the weights' rules.
std::string hub_endpoint();
std::string hub_token();
bool hub_offline();

}  // namespace trainrun
