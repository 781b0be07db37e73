// download(): a real HTTP server on loopback (tests/py/hub_server.py) serving /files/<name>.
#include "support/download.h"
#include "support/http_stream.h"

#include "support/hub_server.h"

#include <curl/curl.h>

#include <chrono>

namespace trainrun {
namespace {

using namespace test;

// 300 kB that are not all alike, so that a byte out of place changes the checksum.
std::string payload() {
  std::string s;
  for (int i = 0; s.size() < 300000; ++i) s += std::to_string(i * 7919 % 10007) + ",";
  return s;
}

class Download : public ::testing::Test {
 protected:
  void serve(nlohmann::json config = nlohmann::json::object()) {
    write_file(dir / "files/data.bin", data);
    config["files_dir"] = dir / "files";
    server.emplace(config, dir.path());
    ASSERT_GT(server->port(), 0);
  }
  DownloadRequest request() {
    DownloadRequest r;
    r.url = server->url("/files/data.bin");
    r.destination = dir.path() / "out/sub/data.bin";
    r.sha256 = sha256;
    r.what = "data.bin";
    r.offline_hint = "or put the file at " + r.destination.string();
    return r;
  }
  fs::path incomplete() const { return dir.path() / "out/sub/data.bin.incomplete"; }

  TempDir dir;
  std::string data = payload();
  std::string sha256 = [this] {
    write_file(dir / "expected", data);
    return file_sha256(dir / "expected");
  }();
  std::optional<HubServer> server;
};

TEST(DownloadDigest, KnownVectors) {
  TempDir dir;
  write_file(dir / "abc", "abc");
  EXPECT_EQ(file_md5(dir / "abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(file_sha256(dir / "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(Download, FirstDownloadVerifiedAndRenamed) {
  serve();
  DownloadRequest r = request();
  r.md5 = file_md5(dir / "expected");
  download(r);
  EXPECT_EQ(read_file(r.destination), data);
  EXPECT_FALSE(fs::exists(incomplete()));
  EXPECT_EQ(server->requests(), std::vector<std::string>{"GET /files/data.bin -"});

  download(r);  // there already: no request
  EXPECT_EQ(server->requests().size(), 1u);
}

TEST_F(Download, ChecksumMismatchLeavesNothing) {
  serve();
  DownloadRequest r = request();
  r.sha256 = std::string(64, '0');
  std::string err = test::error_of<DownloadError>([&] { download(r); });
  EXPECT_NE(err.find("data.bin: cannot download " + r.url + ": sha256 checksum mismatch: expected " +
                     std::string(64, '0') + ", got " + sha256 + "; the partial file was removed"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(r.destination));
  EXPECT_FALSE(fs::exists(incomplete()));
}

TEST_F(Download, TruncatedTransferIsResumedWithARange) {
  serve({{"truncate", true}});
  DownloadRequest r = request();
  download(r);
  EXPECT_EQ(read_file(r.destination), data);
  std::vector<std::string> expect{"GET /files/data.bin -", "GET /files/data.bin bytes=" + std::to_string(data.size() / 2) + "-"};
  EXPECT_EQ(server->requests(), expect);
}

TEST_F(Download, PartialFileFromAnEarlierRunIsResumed) {
  serve();
  DownloadRequest r = request();
  write_file(incomplete(), data.substr(0, 1000));
  download(r);
  EXPECT_EQ(read_file(r.destination), data);
  EXPECT_EQ(server->requests(), std::vector<std::string>{"GET /files/data.bin bytes=1000-"});
}

TEST_F(Download, ServerIgnoringTheRangeStartsOver) {
  serve({{"ranges", false}});
  DownloadRequest r = request();
  write_file(incomplete(), "junk that is not the start of the file");
  download(r);
  EXPECT_EQ(read_file(r.destination), data);
}

TEST_F(Download, HttpErrorNamesTheStatusAndLeavesNothing) {
  serve();
  DownloadRequest r = request();
  r.url = server->url("/files/missing.bin");
  std::string err = test::error_of<DownloadError>([&] { download(r); });
  EXPECT_EQ(err, "data.bin: cannot download " + r.url + ": HTTP 404 Not Found; " + r.offline_hint);
  EXPECT_FALSE(fs::exists(r.destination));
  EXPECT_FALSE(fs::exists(incomplete()));
}

TEST_F(Download, ConnectionRefusedIsOneLineNamingTheUrl) {
  DownloadRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(free_port()) + "/files/data.bin";
  r.destination = dir.path() / "out/data.bin";
  r.what = "data.bin";
  r.offline_hint = "or put the file at " + r.destination.string();
  std::string err = test::error_of<DownloadError>([&] { download(r); });
  EXPECT_EQ(err.rfind("data.bin: cannot download " + r.url + ": " + curl_easy_strerror(CURLE_COULDNT_CONNECT), 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_NE(err.find("; or put the file at "), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(r.destination));
}

// The bar is drawn on a real terminal (util-linux `script` gives this test binary one), and a
// log file gets only the "Downloading" line.
TEST(DownloadProgress, BarOnATerminalOnly) {
  if (std::getenv("TRAINRUN_IN_SCRIPT")) GTEST_SKIP() << "already the inner run";
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string inner = "TRAINRUN_IN_SCRIPT=1 " + self + " --gtest_filter=Download.FirstDownloadVerifiedAndRenamed";
  RunResult tty = run("script -qec '" + inner + "' /dev/null");
  EXPECT_NE(tty.out.find("data.bin: 100%|██████████| 300k/300k [00:00<00:00, "), std::string::npos) << tty.out;
  RunResult file = run(inner);
  EXPECT_EQ(file.err.find("%|"), std::string::npos) << file.err;
  EXPECT_EQ(file.out.find("%|"), std::string::npos) << file.out;
  EXPECT_NE((file.out + file.err).find("Downloading data.bin from http://127.0.0.1:"), std::string::npos);
}

// Two processes of one node: one downloads, the other waits on the lock and finds the file.
TEST_F(Download, TwoProcessesDownloadOnce) {
  serve({{"delay_s", 1.0}});
  DownloadRequest r = request();
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        download(r);
        ::_exit(read_file(r.destination) == data ? 0 : 2);
      } catch (...) {
        ::_exit(1);
      }
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(server->count("GET "), 1);
  EXPECT_EQ(read_file(r.destination), data);
}

TEST_F(Download, HeadFollowsRedirectsOnlyWhenAsked) {
  nlohmann::json config;
  config["repos"]["timm/tiny"]["revisions"]["main"] = {{"commit", std::string(40, 'a')},
                                                       {"files", {{"model.safetensors", "weights"}}}};
  serve(config);
  std::string url = server->url("/timm/tiny/resolve/main/model.safetensors");
  HttpResponse first = http_head(url, {}, false);
  EXPECT_EQ(first.status, 302);
  EXPECT_EQ(first.headers["x-repo-commit"], std::string(40, 'a'));
  EXPECT_EQ(first.headers["x-linked-size"], "7");
  EXPECT_EQ(first.url, url);
  HttpResponse last = http_head(url, {}, true);
  EXPECT_EQ(last.status, 200);
  EXPECT_EQ(last.headers["content-length"], "7");
  EXPECT_EQ(last.url.find("http://localhost:"), 0u) << last.url;
  EXPECT_EQ(server->count("GET "), 0);
}

// HttpStream (the webdataset shards' reader over HTTP): the body in order, in reads of any size,
// whatever the server does to the connection.
std::string read_all(HttpStream& s, std::size_t chunk) {
  std::string out;
  std::vector<char> buf(chunk);
  while (std::size_t n = s.read(buf.data(), buf.size())) out.append(buf.data(), n);
  return out;
}

TEST_F(Download, HttpStreamReadsTheBodyAndReconnectsFromTheByteWhereItBroke) {
  serve({{"truncate", true}});  // the first answer of each file stops half-way, then closes
  HttpStream cut(server->url("/files/data.bin"), {}, 0, 3, 4096);  // a small buffer: curl waits for the reader
  EXPECT_EQ(read_all(cut, 1000), data);
  EXPECT_EQ(cut.reconnections(), 1);
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0], "GET /files/data.bin -");
  EXPECT_EQ(requests[1], "GET /files/data.bin bytes=" + std::to_string(data.size() / 2) + "-");
  // From an offset (a resumed shard), with the cut already spent.
  HttpStream from(server->url("/files/data.bin"), {}, 123456);
  EXPECT_EQ(read_all(from, 1 << 16), data.substr(123456));
  // Without reconnections the cut is an error naming the URL.
  HttpStream again(server->url("/files/other.bin"), {}, 0, 0);
  std::string err = test::error_of<DownloadError>([&] { read_all(again, 512); });
  EXPECT_NE(err.find(server->url("/files/other.bin") + ": HTTP 404"), std::string::npos) << err;
}

TEST_F(Download, HttpStreamTakesAWholeAnswerWhenTheServerIgnoresTheRange) {
  serve({{"truncate", true}, {"ranges", false}});
  HttpStream s(server->url("/files/data.bin"), {}, 0, 3);
  EXPECT_EQ(read_all(s, 7777), data);  // the second answer is the whole file: its first half skipped
  HttpStream late(server->url("/files/data.bin"), {}, 1000);
  EXPECT_EQ(read_all(late, 7777), data.substr(1000));
}

TEST_F(Download, HttpStreamLeftUnreadIsDroppedAtOnce) {
  serve();
  auto start = std::chrono::steady_clock::now();
  {
    HttpStream s(server->url("/files/data.bin"), {}, 0, 3, 1024);
    char c[10];
    EXPECT_EQ(s.read(c, 10), 10u);
  }  // the reading thread is told to stop; nothing waits for it
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

}  // namespace
}  // namespace trainrun
