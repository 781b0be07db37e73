// hf_hub_download(): huggingface_hub's cache layout, read and written, against a Hub stand-in
// (tests/py/hub_server.py) on loopback, and against a cache laid out by hand with no server.
#include "support/hf_hub.h"

#include "support/hub_server.h"
#include "support/download.h"

#include <curl/curl.h>

namespace trainrun {
namespace {

using namespace test;

const std::string kMain = "1111111111111111111111111111111111111111";
const std::string kV1 = "2222222222222222222222222222222222222222";
const std::string kWeights = "safetensors bytes of main";
const std::string kWeightsV1 = "safetensors bytes of v1.0";

std::string sha256_of(const std::string& text, const TempDir& dir) {
  write_file(dir / "sha.tmp", text);
  return file_sha256(dir / "sha.tmp");
}

// Every variable huggingface_hub reads, pointed into the test's folder (and none of the user's).
class HfHub : public ::testing::Test {
 protected:
  void SetUp() override {
    env.set("HF_HOME", dir / "home");
    env.set("HF_HUB_CACHE", dir / "hub");
    for (const char* v : {"HUGGINGFACE_HUB_CACHE", "HF_ENDPOINT", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN",
                          "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"})
      env.set(v, std::nullopt);
  }
  void serve() {
    nlohmann::json config;
    config["repos"]["timm/tiny"]["revisions"] = {
        {"main", {{"commit", kMain}, {"files", {{"model.safetensors", kWeights}}}}},
        {"v1.0", {{"commit", kV1}, {"files", {{"model.safetensors", kWeightsV1}}}}}};
    config["repos"]["timm/plain"] = {{"lfs", false},
                                     {"revisions", {{"main", {{"commit", kMain}, {"files", {{"config.json", "{}"}}}}}}}};
    config["repos"]["timm/gated"] = {{"gated", true},
                                     {"revisions", {{"main", {{"commit", kMain}, {"files", {{"model.safetensors", kWeights}}}}}}}};
    config["renamed"] = {{"old/tiny", "timm/tiny"}};
    config["token"] = "hf_secret";
    server.emplace(config, dir.path());
    ASSERT_GT(server->port(), 0);
    env.set("HF_ENDPOINT", server->url());
  }
  fs::path repo(const std::string& folder = "models--timm--tiny") const { return dir.path() / "hub" / folder; }
  HubFile file(const std::string& spec) const { return *parse_hf_hub(spec); }

  TempDir dir;
  ScopedEnv env;
  std::optional<HubServer> server;
  std::string sha = sha256_of(kWeights, dir);
};

TEST_F(HfHub, ParsesTimmSpelling) {
  EXPECT_FALSE(parse_hf_hub("/weights/resnet.safetensors"));
  HubFile f = file("hf-hub:timm/resnet50d.ra2_in1k");
  EXPECT_EQ(f.repo_id, "timm/resnet50d.ra2_in1k");
  EXPECT_EQ(f.revision, "main");
  EXPECT_EQ(f.filename, "model.safetensors");
  EXPECT_EQ(f.spec(), "hf-hub:timm/resnet50d.ra2_in1k@main");
  EXPECT_EQ(file("hf-hub:timm/x@v1.0").revision, "v1.0");
  for (const char* bad : {"hf-hub:", "hf-hub:a/b/c", "hf-hub:timm/x@", "hf-hub:timm/x@a@b", "hf-hub:timm/a--b",
                          "hf-hub:timm/../x", "hf-hub:timm/x y"})
    EXPECT_THROW(parse_hf_hub(bad), std::invalid_argument) << bad;
}

TEST_F(HfHub, FirstDownloadMakesPythonsLayout) {
  serve();
  fs::path got = hf_hub_download(file("hf-hub:timm/tiny"));
  fs::path pointer = repo() / "snapshots" / kMain / "model.safetensors";
  EXPECT_EQ(got, pointer);
  ASSERT_TRUE(fs::is_symlink(pointer));
  EXPECT_EQ(fs::read_symlink(pointer), fs::path("../../blobs") / sha);
  EXPECT_EQ(read_file(repo() / "blobs" / sha), kWeights);
  EXPECT_EQ(read_file(pointer), kWeights);
  EXPECT_EQ(read_file(repo() / "refs/main"), kMain);  // no newline, as Python writes it
  EXPECT_TRUE(fs::exists(dir.path() / "hub/.locks/models--timm--tiny" / (sha + ".lock")));
  EXPECT_TRUE(fs::exists(dir.path() / "hub/CACHEDIR.TAG"));
  EXPECT_FALSE(fs::exists(repo() / "blobs" / (sha + ".incomplete")));
  std::vector<std::string> expect{"HEAD /timm/tiny/resolve/main/model.safetensors -", "GET /cdn/" + sha + " -"};
  EXPECT_EQ(server->requests(), expect);
}

TEST_F(HfHub, CachedFileNeedsNoDownload) {
  serve();
  hf_hub_download(file("hf-hub:timm/tiny"));
  // As huggingface_hub: a branch is looked up (HEAD) for its current commit, nothing fetched.
  EXPECT_EQ(hf_hub_download(file("hf-hub:timm/tiny")), repo() / "snapshots" / kMain / "model.safetensors");
  EXPECT_EQ(server->count("HEAD "), 2);
  EXPECT_EQ(server->count("GET "), 1);
  // A cached commit, or offline: no request at all.
  hf_hub_download(file("hf-hub:timm/tiny@" + kMain));
  env.set("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(hf_hub_download(file("hf-hub:timm/tiny")), repo() / "snapshots" / kMain / "model.safetensors");
  EXPECT_EQ(server->requests().size(), 3u);
}

TEST_F(HfHub, OfflineWithoutTheFileIsOneClearLine) {
  serve();
  env.set("HF_HUB_OFFLINE", "true");
  std::string err = test::error_of<DownloadError>([&] { hf_hub_download(file("hf-hub:timm/tiny")); });
  EXPECT_EQ(err, "hf-hub:timm/tiny@main: model.safetensors is not in the cache (" + (dir / "hub") +
                     ") and HF_HUB_OFFLINE is set");
  EXPECT_TRUE(server->requests().empty());
}

TEST_F(HfHub, RevisionsTagAndCommit) {
  serve();
  fs::path tag = hf_hub_download(file("hf-hub:timm/tiny@v1.0"));
  EXPECT_EQ(tag, repo() / "snapshots" / kV1 / "model.safetensors");
  EXPECT_EQ(read_file(tag), kWeightsV1);
  EXPECT_EQ(read_file(repo() / "refs/v1.0"), kV1);
  EXPECT_FALSE(fs::exists(repo() / "refs/main"));

  fs::path commit = hf_hub_download(file("hf-hub:timm/tiny@" + kMain));
  EXPECT_EQ(read_file(commit), kWeights);
  EXPECT_FALSE(fs::exists(repo() / "refs" / kMain));  // a commit needs no ref
}

TEST_F(HfHub, PlainGitFileIsNamedByItsEtag) {
  serve();
  fs::path got = hf_hub_download({"timm/plain", "config.json", "main"});
  // git's blob id of "{}": sha1("blob 2\0{}").
  EXPECT_EQ(fs::read_symlink(got), fs::path("../../blobs/9e26dfeeb6e641a33dae4961196235bdb965b21b"));
  EXPECT_EQ(read_file(got), "{}");
}

TEST_F(HfHub, RenamedRepoFollowsTheRelativeRedirect) {
  serve();
  fs::path got = hf_hub_download(file("hf-hub:old/tiny"));
  EXPECT_EQ(got, repo("models--old--tiny") / "snapshots" / kMain / "model.safetensors");
  EXPECT_EQ(read_file(got), kWeights);
}

TEST_F(HfHub, NotFound) {
  serve();
  std::string url = server->url("/timm/nothing/resolve/main/model.safetensors");
  std::string err = test::error_of<DownloadError>([&] { hf_hub_download(file("hf-hub:timm/nothing")); });
  EXPECT_EQ(err.rfind("hf-hub:timm/nothing@main: model.safetensors: repository or file not found: " + url, 0), 0u) << err;

  url = server->url("/timm/tiny/resolve/main/weights.bin");
  err = test::error_of<DownloadError>([&] { hf_hub_download({"timm/tiny", "weights.bin", "main"}); });
  EXPECT_EQ(err, "hf-hub:timm/tiny@main: weights.bin: repository or file not found: " + url);
  EXPECT_TRUE(fs::exists(repo() / ".no_exist" / kMain / "weights.bin"));  // as huggingface_hub remembers it
}

TEST_F(HfHub, GatedNeedsAToken) {
  serve();
  std::string err = test::error_of<DownloadError>([&] { hf_hub_download(file("hf-hub:timm/gated")); });
  EXPECT_NE(err.find("gated or private (HTTP 401): set HF_TOKEN"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);

  env.set("HF_TOKEN", "hf_wrong");
  err = test::error_of<DownloadError>([&] { hf_hub_download(file("hf-hub:timm/gated")); });
  EXPECT_NE(err.find("gated or private (HTTP 403): the token (HF_TOKEN) has no access"), std::string::npos) << err;

  env.set("HF_TOKEN", "hf_secret");
  EXPECT_EQ(read_file(hf_hub_download(file("hf-hub:timm/gated"))), kWeights);
}

TEST_F(HfHub, TokenFileInHfHome) {
  serve();
  write_file(dir / "home/token", "hf_secret\n");
  EXPECT_EQ(read_file(hf_hub_download(file("hf-hub:timm/gated"))), kWeights);
}

TEST_F(HfHub, CacheDirPrecedence) {
  env.set("HF_HUB_CACHE", std::nullopt);
  env.set("HF_HOME", std::nullopt);
  env.set("XDG_CACHE_HOME", std::nullopt);
  env.set("HOME", "/home/u");
  EXPECT_EQ(hub_cache_dir(), fs::path("/home/u/.cache/huggingface/hub"));
  env.set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(hub_cache_dir(), fs::path("/xdg/huggingface/hub"));
  env.set("HF_HOME", "~/hf");
  EXPECT_EQ(hub_cache_dir(), fs::path("/home/u/hf/hub"));
  env.set("HUGGINGFACE_HUB_CACHE", "/legacy");
  EXPECT_EQ(hub_cache_dir(), fs::path("/legacy"));
  env.set("HF_HUB_CACHE", "/hub");
  EXPECT_EQ(hub_cache_dir(), fs::path("/hub"));
}

// The cache a Python user's huggingface_hub left (written here by hand), with no Hub to ask.
class HfHubPythonCache : public HfHub {
 protected:
  void SetUp() override {
    HfHub::SetUp();
    write_file(repo() / "blobs" / sha, kWeights);
    fs::create_directories(repo() / "snapshots" / kMain);
    fs::create_symlink(fs::path("../../blobs") / sha, repo() / "snapshots" / kMain / "model.safetensors");
    write_file(repo() / "refs/main", kMain);
    endpoint = "http://127.0.0.1:" + std::to_string(free_port());
    env.set("HF_ENDPOINT", endpoint);
  }
  std::string endpoint;
};

TEST_F(HfHubPythonCache, ReadOffline) {
  env.set("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(read_file(hf_hub_download(file("hf-hub:timm/tiny"))), kWeights);
  EXPECT_EQ(hub_cached(file("hf-hub:timm/tiny")), repo() / "snapshots" / kMain / "model.safetensors");
  EXPECT_EQ(hub_cached(file("hf-hub:timm/tiny@" + kMain)), repo() / "snapshots" / kMain / "model.safetensors");
  EXPECT_FALSE(hub_cached(file("hf-hub:timm/tiny@v1.0")));
}

TEST_F(HfHubPythonCache, ReadWhenTheHubIsUnreachable) {
  EXPECT_EQ(read_file(hf_hub_download(file("hf-hub:timm/tiny"))), kWeights);
  std::string err = test::error_of<DownloadError>([&] { hf_hub_download(file("hf-hub:timm/tiny@v1.0")); });
  std::string url = endpoint + "/timm/tiny/resolve/v1.0/model.safetensors";
  EXPECT_EQ(err.rfind("hf-hub:timm/tiny@v1.0: model.safetensors: cannot reach " + url + ": " + curl_easy_strerror(CURLE_COULDNT_CONNECT), 0), 0u)
      << err;
  EXPECT_NE(err.find("; to work offline set HF_HUB_OFFLINE=1 with the file cached"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace trainrun
