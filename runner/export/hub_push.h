// A run's model pushed to a Hugging Face Hub repository: the files of `export --format hub`
// (hub_folder.h) written into a staging folder outside the run folder, then uploaded and
// committed (support/hub_upload.h). `trainrun push` pushes once; output.push_to_hub pushes as the
// run goes, with the Trainer's hub_strategy:
//   end         the final model, once the run is over (after model.safetensors is written);
//   every_save  also each checkpoint when it is saved (commit "Training in progress, step N"),
//               uploaded on a thread of its own while training goes on; while one push runs, a
//               new checkpoint is not pushed (the Trainer's rule); a failed push is a warning;
//   checkpoint  every_save, plus the checkpoint's own files in last-checkpoint/ (resumable with
//               output.resume=last-checkpoint after downloading it).
// The final push waits for the one in flight, then pushes the run's model and says what it did.
#pragma once

#include "components/callbacks/callback.h"
#include "runner/io/checkpoint.h"
#include "support/hub_upload.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainrun {

struct Job;

struct HubStageOptions {
  std::string repo;               // ORG/NAME, for the card's snippets
  std::string license = "other";  // the card's license
  std::vector<std::string> include;  // onnx, torchscript: model.onnx, model.pt beside the weights
  std::string checkpoint_dir;     // non-empty: its files go in last-checkpoint/
};

// Writes the repository's files for the weights `weights` into `staging` (new or empty) and
// returns them as the upload's list, in the order written.
std::vector<HubUploadFile> stage_hub_files(Job& job, const std::string& weights, const std::string& staging,
                                           const HubStageOptions& options);

// A fresh folder under the system's temporary folder ($TMPDIR), removed by the destructor.
class StagingFolder {
 public:
  StagingFolder();
  ~StagingFolder();
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "Pushed to hf-hub:org/name: commit 1a2b3c4 (model.safetensors, ...; 1 LFS file, 3.2 MB sent;
// 2 unchanged)", or that nothing changed.
std::string push_summary(const HubPushResult& result, const std::string& repo);

// output.push_to_hub during a run, on the main process only.
class HubPusher : public Callback {
 public:
  HubPusher(Job& job, const PushToHubOptions& options);
  ~HubPusher() override;  // waits for a push in flight
  // Creates the repository (and branch) before training starts: a token that cannot write is
  // found before anything is trained. Throws HubUploadError.
  void create_repository();
  void on_save(Trainer& trainer, TrainerControl& control) override;
  // After the run: waits for the push in flight, then pushes `run_dir`'s model.safetensors.
  // Returns false (after a warning) when the push failed.
  bool push_final(const std::string& run_dir);

 private:
  void wait();
  Job& job_;
  PushToHubOptions options_;
  std::thread worker_;
  std::atomic<bool> busy_{false};
};

}  // namespace trainrun
