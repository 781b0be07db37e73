// `trainrun push` and output.push_to_hub (runner/export/hub_push.h, support/hub_upload.h) against
// the Hub stand-in on loopback (tests/py/hub_server.py + hub_write.py, whose answers
// scripts/hub-upload-check.py holds to huggingface_hub's own client): what a push commits is what
// trainrun's Hub client (hf_hub_download, the same protocol and cache as Python's) downloads, byte
// for byte; a cut connection is retried; a second push sends nothing; the strategies push while
// training goes on, and the run folder is what it is without pushing.
#include "support/hf_hub.h"
#include "support/hub_server.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// quickstart at 512 samples in one process: 8 steps an epoch.
std::string small_run(const fs::path& dir, const std::string& more = "") {
  return test::source("recipes/quickstart.yaml") +
         " data.max_train_samples=512 data.max_eval_samples=200 train.log_every_steps=2 data.workers=1 "
         "world.nproc_per_node=1 output.dir=" + dir.string() + " " + more;
}

std::string downloaded(const std::string& repo, const std::string& file) {
  return test::read_file(hf_hub_download(HubFile{repo, file, "main"}));
}

struct Hub {
  Hub(const json& config, const fs::path& dir) : server(config, dir) {
    env.set("HF_ENDPOINT", server.url());
    env.set("HF_TOKEN", "hf_write");
    env.set("HF_HOME", (dir / "hf").string());
    for (const char* name : {"HF_HUB_CACHE", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN"}) env.set(name, std::nullopt);
  }
  test::HubServer server;
  test::ScopedEnv env;
};

TEST(HubPush, APushedRunIsWhatTheHubClientDownloads) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  auto r = test::run(test::trainrun(small_run(dir / "run", "train.epochs=2")));
  ASSERT_EQ(r.code, 0) << r.err;
  // 1 MiB parts: model.safetensors (4.8 MB) goes in 5, the first cut once mid-body and sent again.
  json faults = json::array({{{"method", "PUT"}, {"path", "/lfs-part/"}, {"cut", true}, {"count", 1}}});
  Hub hub({{"token", "hf_write"}, {"multipart_threshold", 1 << 20}, {"chunk_size", 1 << 20}, {"faults", faults}}, dir.path());
  auto p = test::run(test::trainrun("push " + (dir / "run") + " --repo org/fashion --license mit"));
  ASSERT_EQ(p.code, 0) << p.err;
  const std::string said = p.out + p.err;
  EXPECT_NE(said.find("Pushed to hf-hub:org/fashion: commit "), std::string::npos) << said;
  EXPECT_NE(said.find("upload model.safetensors (part 1 of 5): "), std::string::npos) << said;
  EXPECT_NE(said.find("retrying in 1 s (1/5)"), std::string::npos) << said;
  EXPECT_EQ(hub.server.count("PUT /lfs-part/"), 6);

  EXPECT_EQ(downloaded("org/fashion", "model.safetensors"), test::read_file(dir / "run/model.safetensors"));
  EXPECT_EQ(downloaded("org/fashion", "recipe.yaml"), test::read_file(dir / "run/recipe.resolved.yaml"));
  const json config = json::parse(downloaded("org/fashion", "config.json"));
  EXPECT_EQ(config["architecture"], "basicnet");
  EXPECT_EQ(config["label_names"][0], "T-shirt/top");
  const std::string card = downloaded("org/fashion", "README.md");
  EXPECT_EQ(card.rfind("---\n", 0), 0u);
  EXPECT_NE(card.find("license: mit\n"), std::string::npos);
  EXPECT_NE(card.find("hf-hub:org/fashion"), std::string::npos);
  EXPECT_EQ(downloaded("org/fashion", "training_curves.png").substr(1, 3), "PNG");
  EXPECT_EQ(json::parse(downloaded("org/fashion", "labels.json"))["9"], "Ankle boot");

  // The same run again: the Hub has every file; nothing is sent, no commit made.
  const int puts = hub.server.count("PUT "), commits = hub.server.count("POST /api/models/org/fashion/commit/main");
  EXPECT_EQ(commits, 1);
  p = test::run(test::trainrun("push " + (dir / "run") + " --repo org/fashion --license mit"));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE((p.out + p.err).find("hf-hub:org/fashion already holds these 6 files: nothing pushed, no commit"),
            std::string::npos) << p.out + p.err;
  EXPECT_EQ(hub.server.count("PUT "), puts);
  EXPECT_EQ(hub.server.count("POST /api/models/org/fashion/commit/main"), commits);

  // The first epoch's checkpoint to a branch: its weights, its own card; main keeps the run's.
  p = test::run(test::trainrun("push " + (dir / "run") + " --repo org/fashion --checkpoint " + (dir / "run/checkpoint-8") +
                               " --revision epoch-1"));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(test::read_file(hf_hub_download(HubFile{"org/fashion", "model.safetensors", "epoch-1"})),
            test::read_file(dir / "run/checkpoint-8/model.safetensors"));
  EXPECT_EQ(downloaded("org/fashion", "model.safetensors"), test::read_file(dir / "run/model.safetensors"));
}

// The run folder's files and every weights file in it, by relative path (the TensorBoard file's
// name holds the time and host: left out).
std::map<std::string, std::string> run_files(const fs::path& run) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(run)) {
    const std::string rel = fs::relative(e.path(), run).string();
    if (rel.find("events.out.tfevents") != std::string::npos || !e.is_regular_file()) continue;
    out[rel] = e.path().extension() == ".safetensors" ? test::read_file(e.path()) : "";
  }
  return out;
}

TEST(HubPush, StrategiesPushWhileTrainingGoesOn) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const std::string every4 = "train.epochs=2 output.save_every=4 output.keep_last=null";
  auto plain = test::run(test::trainrun(small_run(dir / "plain", every4)));
  ASSERT_EQ(plain.code, 0) << plain.err;
  // The first commit takes 3 s: training goes on meanwhile, and saves while it runs are not pushed.
  json faults = json::array({{{"method", "POST"}, {"path", "/api/models/org/live/commit/"}, {"delay_s", 3}, {"count", 1}}});
  Hub hub({{"token", "hf_write"}, {"faults", faults}}, dir.path());
  auto r = test::run(test::trainrun(small_run(dir / "pushed", every4 + " output.push_to_hub.repo=org/live "
                                                                      "output.push_to_hub.strategy=checkpoint")));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string said = r.out + r.err;
  EXPECT_NE(said.find("output.push_to_hub: the previous push is still running; checkpoint-8 is not pushed"), std::string::npos) << said;
  const auto first = said.find("Pushed to hf-hub:org/live: commit ");
  ASSERT_NE(first, std::string::npos) << said;
  EXPECT_NE(said.find("last-checkpoint/trainer_state.json", first), std::string::npos) << said;
  EXPECT_LT(said.find("Saving model checkpoint to " + (dir / "pushed/checkpoint-8")), first) << said;
  EXPECT_NE(said.find("Pushed to hf-hub:org/live: commit ", first + 1), std::string::npos) << said;
  // Step 4's, then the end's; a later save (12, 16) only if the run outlasted the slow commit.
  EXPECT_GE(hub.server.count("POST /api/models/org/live/commit/main"), 2);
  EXPECT_EQ(run_files(dir / "pushed"), run_files(dir / "plain"));
  EXPECT_EQ(downloaded("org/live", "model.safetensors"), test::read_file(dir / "pushed/model.safetensors"));
  const int64_t step = json::parse(downloaded("org/live", "last-checkpoint/trainer_state.json"))["global_step"];
  EXPECT_NE(step, 8);
  EXPECT_EQ(downloaded("org/live", "last-checkpoint/model.safetensors"),
            test::read_file(dir / ("pushed/checkpoint-" + std::to_string(step) + "/model.safetensors")));

  // end: one commit, after the run.
  auto end = test::run(test::trainrun(small_run(dir / "end", "train.epochs=1 output.push_to_hub.repo=org/end "
                                                             "output.push_to_hub.strategy=end")));
  ASSERT_EQ(end.code, 0) << end.err;
  EXPECT_EQ(hub.server.count("POST /api/models/org/end/commit/main"), 1);
  EXPECT_EQ(downloaded("org/end", "model.safetensors"), test::read_file(dir / "end/model.safetensors"));

  // A push the Hub refuses during the run is a warning; training goes on, and the final push
  // (the Hub taking it again) commits the model.
  fs::create_directories(dir / "refusing");
  Hub refusing({{"token", "hf_write"},
                {"faults", json::array({{{"method", "POST"}, {"path", "/api/models/org/flaky/preupload/"}, {"status", 403},
                                         {"message", "Forbidden for now"}, {"count", 1}}})}},
               dir / "refusing");
  auto flaky = test::run(test::trainrun(small_run(dir / "flaky", "train.epochs=1 output.save_every=4 "
                                                                 "output.push_to_hub.repo=org/flaky")));
  ASSERT_EQ(flaky.code, 0) << flaky.err;
  EXPECT_NE((flaky.out + flaky.err).find("HTTP 403 Forbidden: Forbidden for now; the token cannot write to org/flaky"),
            std::string::npos) << flaky.out + flaky.err;
  EXPECT_NE((flaky.out + flaky.err).find("(training goes on)"), std::string::npos);
  EXPECT_EQ(refusing.server.count("POST /api/models/org/flaky/commit/main"), 2);  // checkpoint-8's, the end's
  EXPECT_EQ(downloaded("org/flaky", "model.safetensors"), test::read_file(dir / "flaky/model.safetensors"));
}

}  // namespace
}  // namespace trainrun
