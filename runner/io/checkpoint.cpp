#include "runner/io/checkpoint.h"

#include "components/callbacks/checkpoint_format.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <regex>

namespace trainrun {

namespace {

namespace fs = std::filesystem;

// Renamed away first, so that a crash half-way through the removal leaves no folder that
// looks like a checkpoint.
void remove_folder(const fs::path& folder) {
  fs::path doomed = folder.parent_path() / ("." + folder.filename().string() + ".deleting.tmp");
  std::error_code ec;
  fs::rename(folder, doomed, ec);
  fs::remove_all(ec ? folder : doomed, ec);
}

}  // namespace

std::optional<int64_t> checkpoint_step(const std::string& name) {
  static const std::regex pattern(R"(checkpoint-(\d+))");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return std::nullopt;
  return std::stoll(m[1].str());
}

bool is_complete_checkpoint(const fs::path& folder) {
  if (!fs::is_directory(folder)) return false;
  for (const auto& file : kCheckpointFiles)
    if (file.role == CheckpointFileRole::Defining && !fs::is_regular_file(folder / file.name)) return false;
  return true;
}

void check_resume_path(const std::string& path) {
  if (!fs::exists(path)) throw RecipeError("output.resume: " + path + ": no such checkpoint");
  if (is_complete_checkpoint(path)) return;
  std::string missing;  // "trainer_state.json or model.safetensors"
  for (const auto& file : kCheckpointFiles)
    if (file.role == CheckpointFileRole::Defining) missing = missing.empty() ? file.name : file.name + (" or " + missing);
  throw RecipeError("output.resume: " + path + ": not a complete checkpoint (no " + missing + ")");
}

int64_t CheckpointOptions::save_steps() const {
  return save_every == "epoch" || save_every == "never" ? 0 : std::stoll(save_every);
}

std::vector<std::string> complete_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto step = checkpoint_step(it->path().filename().string());
    if (step && !it->is_symlink() && is_complete_checkpoint(it->path())) found.emplace_back(*step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [_, p] : found) out.push_back(p);
  return out;
}

void check_resume_option(const CheckpointOptions& output) {
  if (output.resume != "auto" && output.resume != "never") check_resume_path(output.resume);
}

std::optional<std::string> planned_resume_point(const CheckpointOptions& options) {
  if (options.resume == "never") return std::nullopt;
  if (options.resume != "auto") return options.resume;
  auto all = complete_checkpoints(options.dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

void remove_unfinished_checkpoints(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(".checkpoint-", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".tmp") {
      spdlog::warn("Removing {}: an unfinished checkpoint from an earlier run", it->path().string());
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

void write_checkpoint_folder(const std::string& dir_name, const std::string& name,
                             const std::function<void(const fs::path& tmp)>& write_files,
                             const std::string& state_json) {
  fs::path dir = dir_name, final_path = dir / name, tmp = dir / ("." + name + ".tmp");
  std::error_code ec;
  try {
    fs::remove_all(tmp, ec);
    fs::create_directory(tmp, ec);
    if (ec) throw CheckpointError(tmp.string() + ": cannot create: " + ec.message());
    write_files(tmp);
    write_durable(tmp / kStateFile, state_json);  // last: marks the folder complete
    fsync_dir(tmp);
    fs::path old = dir / ("." + name + ".old.tmp");
    if (fs::exists(final_path)) fs::rename(final_path, old);  // saved again at the same step (a resumed run)
    fs::rename(tmp, final_path);
    fsync_dir(dir);
    fs::remove_all(old, ec);
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    throw CheckpointError("cannot save " + final_path.string() + ": " + e.what() +
                          " (older checkpoints are kept)");
  }
}

void update_best_link(const std::string& dir_name, const std::string& name) {
  // A symlink cannot be replaced in place: a new one under a temporary name, renamed over it.
  fs::path dir = dir_name, link = dir / "checkpoint-best", tmp = dir / ".checkpoint-best.tmp";
  std::error_code ec;
  if (fs::is_symlink(link) && fs::read_symlink(link, ec) == name) return;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(name, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) throw CheckpointError(link.string() + ": cannot point it at " + name + ": " + ec.message());
  try {
    fsync_dir(dir);
  } catch (const FileWriteError& e) {
    throw CheckpointError(e.what());
  }
}

void rotate_checkpoints(const std::string& dir, std::size_t keep, const std::string& best, const std::string& kept) {
  auto all = complete_checkpoints(dir);
  std::error_code ec;
  fs::path resumed = kept.empty() ? fs::path() : fs::weakly_canonical(kept, ec);
  for (std::size_t i = 0; i + keep < all.size(); ++i) {
    if (fs::path(all[i]).filename() == best) continue;
    if (!resumed.empty() && fs::weakly_canonical(all[i], ec) == resumed) continue;
    remove_folder(all[i]);
  }
}

}  // namespace trainrun
