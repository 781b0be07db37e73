// WebDataset shards streamed over HTTP from a server on loopback (tests/py/hub_server.py): a
// server that drops every connection half-way through its first answer (the stream reconnects
// with a Range request from the last byte, and the run is bit for bit the run from local files),
// the Hub's dataset repos (redirect to a CDN, token for a gated repo), and a shard that answers 404.
#include "support/hub_server.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace wds_http_test {

using nlohmann::json;
namespace fs = std::filesystem;

class HttpShards : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/wds_fixture.py") + " " +
                       (dir / "shards") + " 160 40 40");  // train-000000..3, val-000000
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // The recipe with its shards under `base` (a folder or a URL prefix).
  std::string recipe(const std::string& name, const std::string& base, const std::string& extra = "") {
    test::write_file(dir / name, R"(seed: 5
model: {name: basicnet, num_classes: auto}
data:
  dataset: {name: webdataset, urls: ")" + base + R"(/train-{000000..000003}.tar", eval_urls: ")" + base +
                                        R"(/val-000000.tar", shuffle: {buffer: 30})" + extra + R"(}
  train_transforms: [{random_resized_crop: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  eval_transforms: [{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]
  batch_size: 16
  workers: 2
optimizer: {name: adamw, lr: 0.003}
train: {epochs: 1, loss: cross_entropy, log_every_steps: 2}
world: {nproc_per_node: 1, master_port: 0}
)");
    return dir / name;
  }
  json files_config(bool truncate) const {
    return {{"files_dir", dir / "shards"}, {"truncate", truncate}};
  }
  test::TempDir dir;
};

TEST_F(HttpShards, DroppedConnectionsAreResumedWithARangeAndTheRunIsTheLocalOne) {
  auto local = test::run(test::trainrun(recipe("local.yaml", dir / "shards") + " output.dir=" + (dir / "local")));
  ASSERT_EQ(local.code, 0) << local.err;
  test::HubServer server(files_config(/*truncate=*/true), dir.path());
  auto remote = test::run(test::trainrun(recipe("http.yaml", server.url("/files")) + " output.dir=" + (dir / "http")));
  ASSERT_EQ(remote.code, 0) << remote.out << remote.err;
  // Every file's first answer was cut half-way, and the stream asked for the rest from the byte
  // where it broke (train-000000.tar's first answer went to the preflight, which reads one sample).
  const std::string log = test::read_file(dir / "requests.log");
  for (const char* line : {"GET /files/sizes.json bytes=62-", "GET /files/train-000001.tar bytes=51200-",
                           "GET /files/train-000002.tar bytes=51200-", "GET /files/train-000003.tar bytes=51200-"})
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
  EXPECT_NE((remote.out + remote.err).find("reconnecting from byte"), std::string::npos) << remote.err;
  EXPECT_EQ(test::by_step(dir / "local/metrics.jsonl", "loss"), test::by_step(dir / "http/metrics.jsonl", "loss"));
  EXPECT_TRUE(test::read_file(dir / "local/model.safetensors") == test::read_file(dir / "http/model.safetensors"))
      << "the run over HTTP differs from the run from local shards";

}

TEST_F(HttpShards, CacheDirKeepsWholeShardsAndASecondRunReadsThem) {
  auto local = test::run(test::trainrun(recipe("local.yaml", dir / "shards") + " output.dir=" + (dir / "local")));
  ASSERT_EQ(local.code, 0) << local.err;
  test::HubServer server(files_config(/*truncate=*/true), dir.path());
  const std::string r = recipe("cached.yaml", server.url("/files"), ", cache_dir: " + (dir / "cache"));
  auto first = test::run(test::trainrun(r + " output.dir=" + (dir / "first")));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  // Each shard downloaded whole (the cut one resumed), then read from the disk: the same run.
  int cached = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "cache"))
    if (e.path().extension() == ".tar") {
      ++cached;
      EXPECT_TRUE(test::read_file(e.path().string()) == test::read_file(dir / ("shards/" + e.path().filename().string())))
          << e.path();
    }
  EXPECT_EQ(cached, 5);  // train-000000..3 and val-000000
  EXPECT_TRUE(test::read_file(dir / "local/model.safetensors") == test::read_file(dir / "first/model.safetensors"));
  const std::size_t before = server.requests().size();
  auto second = test::run(test::trainrun(r + " output.dir=" + (dir / "second")));
  ASSERT_EQ(second.code, 0) << second.err;
  for (std::size_t i = before; i < server.requests().size(); ++i)
    EXPECT_EQ(server.requests()[i].find(".tar"), std::string::npos) << "fetched again: " << server.requests()[i];
}

TEST_F(HttpShards, WithoutReconnectionsACutShardIsOneLineNamingIt) {
  test::HubServer server(files_config(/*truncate=*/true), dir.path());
  // The first answer of every file is cut: sizes.json's too, before anything starts (exit 2).
  auto none = test::run(test::trainrun(recipe("noretry.yaml", server.url("/files"), ", retries: 0") +
                                       " data.on_bad_file=error output.dir=" + (dir / "noretry")));
  EXPECT_EQ(none.code, 2) << none.out << none.err;
  EXPECT_NE(none.err.find(server.url("/files/sizes.json") + ": Transferred a partial file"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("(after 0 reconnections)"), std::string::npos) << none.err;
}

TEST_F(HttpShards, HubDatasetShardsFollowTheRedirectAndSendTheToken) {
  json files;
  for (const auto& e : fs::directory_iterator(dir / "shards"))
    files["data/" + e.path().filename().string()] = {{"path", e.path().string()}};
  json config = {{"repos", {{"datasets/acme/shapes", {{"revisions", {{"main", {{"commit", std::string(40, 'a')}, {"files", files}}}}},
                                                     {"gated", true}}}}},
                 {"token", "hf_secret"}};
  test::HubServer server(config, dir.path());
  const std::string env = "HF_ENDPOINT=" + server.url() + " HF_HOME=" + (dir / "hf") + " ";
  const std::string r = recipe("hub.yaml", "hf-hub:datasets/acme/shapes/data");
  auto ok = test::run(env + "HF_TOKEN=hf_secret " + test::trainrun(r + " output.dir=" + (dir / "hub")));
  ASSERT_EQ(ok.code, 0) << ok.out << ok.err;
  auto local = test::run(test::trainrun(recipe("local.yaml", dir / "shards") + " output.dir=" + (dir / "local")));
  ASSERT_EQ(local.code, 0) << local.err;
  EXPECT_TRUE(test::read_file(dir / "local/model.safetensors") == test::read_file(dir / "hub/model.safetensors"));
  bool redirected = false;
  for (const auto& line : server.requests()) redirected |= line.rfind("GET /cdn/", 0) == 0;
  EXPECT_TRUE(redirected) << test::read_file(dir / "requests.log");

  // Without the token the gated repo answers 401: one line naming the file, before anything starts.
  auto refused = test::run(env + test::trainrun(r + " output.dir=" + (dir / "refused")));
  EXPECT_EQ(refused.code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("/datasets/acme/shapes/resolve/main/data/"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir / "refused"));
}

TEST_F(HttpShards, AShardThatAnswers404IsNamed) {
  fs::remove(dir / "shards/train-000002.tar");
  test::HubServer server(files_config(/*truncate=*/false), dir.path());
  const std::string r = recipe("http.yaml", server.url("/files"));
  // check opens every shard and says which it could not.
  auto check = test::run(test::trainrun("check " + r));
  EXPECT_EQ(check.code, 2) << check.out << check.err;
  EXPECT_NE(check.out.find("train shards: 4 (" + server.url("/files/train-000000.tar") + " ... " +
                           server.url("/files/train-000003.tar") + "), 3 of 4 open"),
            std::string::npos) << check.out;
  EXPECT_NE(check.out.find("cannot open: " + server.url("/files/train-000002.tar") + ": HTTP 404"), std::string::npos)
      << check.out;
  // on_bad_file: error stops the run with that line; skip warns and goes on with the next shard.
  auto stopped = test::run(test::trainrun(r + " data.on_bad_file=error output.dir=" + (dir / "stopped")));
  EXPECT_EQ(stopped.code, 1) << stopped.out << stopped.err;
  EXPECT_NE(stopped.err.find(server.url("/files/train-000002.tar") + ": HTTP 404"), std::string::npos) << stopped.err;
  auto skipped = test::run(test::trainrun(r + " output.dir=" + (dir / "skipped")));
  EXPECT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_NE((skipped.out + skipped.err).find("skipped the rest of a shard: " + server.url("/files/train-000002.tar") + ": HTTP 404"),
            std::string::npos) << skipped.out << skipped.err;
}

}  // namespace wds_http_test
}  // namespace trainrun
