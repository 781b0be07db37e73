// Unpacking what download() fetched (libarchive): a .tar, .tar.gz / .tgz or a single .gz, as
// torchvision's extract_archive does, but refusing entries that would land outside the folder
// (an absolute path, a `..`, a link or a device) and never leaving half an archive behind.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace trainrun {

// "ARCHIVE: what is wrong (the entry, or libarchive's reason)".
struct ArchiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Unpacks `archive` into `dest_dir` (created if missing). A tar is unpacked into a hidden
// folder inside `dest_dir` first; only when every entry is out are its top-level entries renamed
// into `dest_dir`, after checking that none of them would replace anything but an empty folder.
// So a corrupt archive, a refused entry or a full disk leaves `dest_dir` as it was. A single .gz
// (not .tar.gz) is gunzip_file'd to `dest_dir`/<its name without .gz>. Throws ArchiveError.
void extract_archive(const std::filesystem::path& archive, const std::filesystem::path& dest_dir);

// Decompresses a gzip file to `dst` (written as <dst>.incomplete, then renamed). Throws
// ArchiveError.
void gunzip_file(const std::filesystem::path& src, const std::filesystem::path& dst);

}  // namespace trainrun
