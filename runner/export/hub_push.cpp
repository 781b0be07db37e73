#include "runner/export/hub_push.h"

#include "components/callbacks/checkpoint_format.h"
#include "runner/export/hub_folder.h"
#include "runner/export/model_files.h"
#include "runner/recipe/job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// The checkpoint's files, linked (else copied) into `dir`: a rotation that removes the
// checkpoint while its push runs leaves the links whole.
std::vector<HubUploadFile> stage_checkpoint(const fs::path& checkpoint, const fs::path& dir) {
  std::vector<HubUploadFile> out;
  fs::create_directories(dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(checkpoint))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::error_code ec;
    fs::create_hard_link(f, dir / f.filename(), ec);
    if (ec) fs::copy_file(f, dir / f.filename());
    out.push_back({"last-checkpoint/" + f.filename().string(), dir / f.filename()});
  }
  return out;
}

std::string megabytes(std::int64_t bytes) { return fmt::format("{:.1f} MB", double(bytes) / 1e6); }

}  // namespace

std::vector<HubUploadFile> stage_hub_files(Job& job, const std::string& weights, const std::string& staging,
                                           const HubStageOptions& options) {
  const std::vector<int64_t> input_size = pipeline_output_size(job);
  std::vector<HubUploadFile> out;
  for (const std::string& name : write_hub_folder(job, weights, input_size, staging, {options.repo, options.license}))
    out.push_back({name, fs::path(staging) / name});
  for (const std::string& format : options.include) {
    const std::string name = format == "onnx" ? "model.onnx" : "model.pt";
    write_model_export(job, weights, input_size, format, (fs::path(staging) / name).string());
    out.push_back({name, fs::path(staging) / name});
  }
  if (!options.checkpoint_dir.empty()) {
    auto files = stage_checkpoint(options.checkpoint_dir, fs::path(staging) / "last-checkpoint");
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

StagingFolder::StagingFolder() {
  std::string pattern = (fs::temp_directory_path() / "trainrun-push-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw HubUploadError("push: cannot make a staging folder " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
}

StagingFolder::~StagingFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string push_summary(const HubPushResult& r, const std::string& repo) {
  if (r.commit_oid.empty())
    return fmt::format("hf-hub:{} already holds these {} files: nothing pushed, no commit", repo, r.unchanged.size());
  std::string text = fmt::format("Pushed to hf-hub:{}: commit {} ({}; {} LFS file{}, {} sent", repo, r.commit_oid.substr(0, 7),
                                 fmt::join(r.committed, ", "), r.lfs_files_sent, r.lfs_files_sent == 1 ? "" : "s",
                                 megabytes(r.lfs_bytes_sent));
  if (!r.unchanged.empty()) text += fmt::format("; {} unchanged", r.unchanged.size());
  return text + ")" + (r.commit_url.empty() ? "" : " " + r.commit_url);
}

// --- output.push_to_hub ------------------------------------------------------------------------

HubPusher::HubPusher(Job& job, const PushToHubOptions& options) : job_(job), options_(options) {}

HubPusher::~HubPusher() { wait(); }

void HubPusher::wait() {
  if (worker_.joinable()) worker_.join();
}

void HubPusher::create_repository() {
  HubPush push;
  push.repo_id = options_.repo;
  push.revision = options_.revision;
  push.private_repo = options_.private_repo;
  hub_create_repo(push);
}

void HubPusher::on_save(Trainer& trainer, TrainerControl&) {
  if (options_.strategy == "end" || !trainer.is_main_process()) return;
  const int64_t step = trainer.state().global_step;
  const fs::path checkpoint = fs::path(trainer.output_dir()) / ("checkpoint-" + std::to_string(step));
  if (!is_complete_checkpoint(checkpoint)) return;
  if (busy_) {
    spdlog::info("output.push_to_hub: the previous push is still running; {} is not pushed", checkpoint.filename().string());
    return;
  }
  wait();
  std::shared_ptr<StagingFolder> staging;
  HubPush push;
  push.repo_id = options_.repo;
  push.revision = options_.revision;
  push.private_repo = options_.private_repo;
  push.message = fmt::format("Training in progress, step {}", step);
  HubStageOptions stage;
  stage.repo = options_.repo;
  if (options_.strategy == "checkpoint") stage.checkpoint_dir = checkpoint.string();
  try {  // the files are written here, between steps; the upload goes on a thread
    staging = std::make_shared<StagingFolder>();
    push.files = stage_hub_files(job_, (checkpoint / kModelFile).string(), staging->path(), stage);
  } catch (const std::exception& e) {
    spdlog::warn("output.push_to_hub: {} is not pushed: {} (training goes on)", checkpoint.filename().string(), e.what());
    return;
  }
  busy_ = true;
  worker_ = std::thread([this, push = std::move(push), staging]() {
    try {
      spdlog::info("{}", push_summary(hub_push(push), options_.repo));
    } catch (const std::exception& e) {
      spdlog::warn("output.push_to_hub: {} (training goes on)", e.what());
    }
    busy_ = false;
  });
}

bool HubPusher::push_final(const std::string& run_dir) {
  wait();
  StagingFolder staging;
  HubPush push;
  push.repo_id = options_.repo;
  push.revision = options_.revision;
  push.private_repo = options_.private_repo;
  push.message = "End of training";
  try {
    HubStageOptions stage;
    stage.repo = options_.repo;
    push.files = stage_hub_files(job_, (fs::path(run_dir) / kModelFile).string(), staging.path(), stage);
    spdlog::info("{}", push_summary(hub_push(push), options_.repo));
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("output.push_to_hub: {}; the run folder is complete: `trainrun push {} --repo {}` pushes it", e.what(),
                 run_dir, options_.repo);
    return false;
  }
}

}  // namespace trainrun
