// Bad inputs of a push to the Hugging Face Hub (docs/reference/bad-inputs.md; the fixture:
// bad_input.h): the stand-in on loopback (tests/py/hub_server.py) answering as the Hub does for
// a missing or read-only token, a repository the token cannot see, a commit that raced another,
// a file too large, rate limits and a Hub that keeps failing. Each is one line with the Hub's
// own message; the run folder stays as it was.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

using nlohmann::json;

json fault(const std::string& method, const std::string& path, int status, const std::string& message, int count = 1,
           json headers = json::object()) {
  return json::array({{{"method", method}, {"path", path}, {"status", status}, {"message", message}, {"count", count},
                       {"headers", headers}}});
}

// `text` with the stand-in's URL for $HF_ENDPOINT (the page shows it so).
std::string at(const test::HubServer& hub, std::string text) {
  for (std::size_t i; (i = text.find("$HF_ENDPOINT")) != std::string::npos;) text.replace(i, 12, hub.url());
  return text;
}

TEST_F(BadInput, PushWithoutToken) {
  const std::string args = push_args(json::object());
  env_.set("HF_TOKEN", std::nullopt);
  expect_err(test::run(test::trainrun(args)), 1, at(*hub_,
             "push to hf-hub:org/net: create the repository (POST $HF_ENDPOINT/api/repos/create): HTTP 401 Unauthorized: "
             "Invalid username or password; no token: set HF_TOKEN to a token with write access\n"));
  EXPECT_EQ(hub_->count("POST /api/models/"), 0);
}

TEST_F(BadInput, PushWithReadOnlyToken) {
  const std::string args = push_args({{"read_only_token", true}});
  expect_err(test::run(test::trainrun(args)), 1, at(*hub_,
             "push to hf-hub:org/net: create the repository (POST $HF_ENDPOINT/api/repos/create): HTTP 403 Forbidden: You "
             "don't have the rights to write to this repository: the token is read-only or another user's; the token "
             "cannot write to org/net: give a write token of its owner or organisation\n"));
}

TEST_F(BadInput, PushToRepositoryNotVisible) {
  const std::string args = push_args({{"faults", fault("POST", "/api/models/org/net/preupload/", 404, "Repository not found")}});
  expect_err(test::run(test::trainrun(args)), 1, at(*hub_,
             "push to hf-hub:org/net: preupload (POST $HF_ENDPOINT/api/models/org/net/preupload/main): HTTP 404 Not Found: "
             "Repository not found; no repository org/net or revision main that this token can see\n"));
}

TEST_F(BadInput, PushCommitRaced) {
  const std::string args = push_args(
      {{"faults", fault("POST", "/api/models/org/net/commit/", 412, "A commit has happened since. Please refresh and try again.")}});
  expect_err(test::run(test::trainrun(args)), 1, at(*hub_,
             "push to hf-hub:org/net: commit (POST $HF_ENDPOINT/api/models/org/net/commit/main): HTTP 412 Precondition "
             "Failed: A commit has happened since. Please refresh and try again; another commit reached main first: push "
             "again (uploaded files are not sent twice)\n"));
  // Pushed again, the weights already uploaded are not sent twice.
  const int puts = hub_->count("PUT ");
  auto r = test::run(test::trainrun(args));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(hub_->count("PUT "), puts);
}

TEST_F(BadInput, PushFileTooLarge) {
  // Every LFS file in one PUT (no multipart), model.safetensors the first.
  const std::string args = push_args({{"multipart_threshold", 1e9}, {"faults", fault("PUT", "/lfs-upload/", 413, "Payload Too Large")}});
  const auto r = test::run(test::trainrun(args));
  std::string oid = r.err.substr(std::min(r.err.size(), r.err.find("/lfs-upload/") + 12), 64);
  shown_as(oid, "<sha256>");
  shown_as("http://localhost:" + std::to_string(hub_->port()), "<LFS storage>");  // the CDN's host, as the Hub's
  expect_err(r, 1,
             "push to hf-hub:org/net: upload model.safetensors (PUT http://localhost:" + std::to_string(hub_->port()) +
                 "/lfs-upload/" + oid + "): HTTP 413 Content Too Large: Payload Too Large; the Hub refuses a "
                 "request this large\n");
}

// 429 with Retry-After: 0, six times: five waits of 1 s (Retry-After + 1, as huggingface_hub), then the line.
TEST_F(BadInput, PushRateLimited) {
  const std::string args = push_args({{"faults", fault("POST", "/api/models/org/net/preupload/", 429, "Too many requests",
                                                       6, {{"Retry-After", "0"}})}});
  const auto r = test::run(test::trainrun(args));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(hub_->count("POST /api/models/org/net/preupload/"), 6);
  EXPECT_EQ(last_line(r.err), "push to hf-hub:org/net: preupload (POST " + hub_->url() +
                                  "/api/models/org/net/preupload/main): HTTP 429 Too Many Requests: Too many requests; "
                                  "rate limited: wait and push again");
  saw(r.err, r.code);
}

// output.push_to_hub makes the repository before anything trains: a token that cannot is exit 2.
TEST_F(BadInput, PushToHubWithoutToken) {
  hub_.emplace(json{{"token", "hf_write"}}, dir.path());
  env_.set("HF_HOME", dir / "hf");
  env_.set("HF_ENDPOINT", hub_->url());
  shown_as(hub_->url(), "$HF_ENDPOINT");
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) env_.set(name, std::nullopt);
  expect_err(test::run(test::trainrun(recipe() + " output.push_to_hub.repo=org/net")), 2, at(*hub_,
             "output.push_to_hub: push to hf-hub:org/net: create the repository (POST $HF_ENDPOINT/api/repos/create): "
             "HTTP 401 Unauthorized: Invalid username or password; no token: set HF_TOKEN to a token with write access\n"));
  EXPECT_FALSE(fs::exists(dir / "run"));
  auto r = test::run(test::trainrun("check " + recipe() + " output.push_to_hub.repo=org/net"));  // asks the Hub nothing
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(hub_->count("POST "), 1);
}

}  // namespace
}  // namespace trainrun::bad_input
