// The documentation site as a reader meets it: built strict from mkdocs.yml, then opened in a real
// browser, headless Chromium, by tests/docs/browser_check.py (no console error or uncaught
// exception, no request leaving the machine, no HTTP error on the start page and one page of each
// nav section; the search finds label_regex). The start page's screenshot is left in the build
// folder, docs/start-page.png. Without the tools (mkdocs and mkdocs-material, chromium,
// python3-websocket: scripts/setup.sh --docs) the test is skipped, unless
// TRAINRUN_REQUIRE_DOCS_TOOLS=1 (make docs-check, CI) makes that a failure.
#include "test_util.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace trainrun {
namespace {
// Names of their own: the unity build compiles this file with the other tests/docs/ ones.
namespace browser_check {

namespace fs = std::filesystem;

bool docs_tools_required() {
  const char* v = std::getenv("TRAINRUN_REQUIRE_DOCS_TOOLS");
  return v && std::string(v) == "1";
}

// The folder the build writes to: where the screenshot is left.
fs::path build_dir() {
#ifdef TRAINRUN_BUILD_DIR
  return TRAINRUN_BUILD_DIR;
#else
  return fs::path(TRAINRUN_BINARY).parent_path();
#endif
}

// What of mkdocs, Chromium and python3-websocket is not installed ("" when all are).
std::string missing_docs_tools() {
  std::string missing;
  if (test::run("command -v mkdocs").code != 0) missing += " mkdocs";
  if (test::run("{ command -v chromium || command -v chromium-browser; }").code != 0) missing += " chromium";
  if (test::run(std::string(test::kPython) + " -c 'import websocket'").code != 0) missing += " python3-websocket";
  return missing;
}

#define BROWSER_SKIP_OR_FAIL(why)                                                     \
  do {                                                                                \
    if (docs_tools_required()) FAIL() << (why) << " (TRAINRUN_REQUIRE_DOCS_TOOLS=1)"; \
    GTEST_SKIP() << (why);                                                            \
  } while (0)

TEST(Docs, SiteOpensInHeadlessChromium) {
  const std::string config = test::source("mkdocs.yml");
  if (!fs::exists(config)) BROWSER_SKIP_OR_FAIL("no documentation site: " + config + " is missing");
  const std::string missing = missing_docs_tools();
  if (!missing.empty())
    BROWSER_SKIP_OR_FAIL("missing:" + missing + "; scripts/setup.sh --docs installs them (mkdocs, mkdocs-material, chromium, "
                 "python3-websocket)");

  test::TempDir tmp;
  // Everything bounded: the build 45 s, the browser check 60 s (then SIGTERM, which stops
  // Chromium and the server; SIGKILL 5 s later): the test ends well within 2 minutes.
  // From the source tree, as `make docs`: the site's snippets (pymdownx.snippets base_path ".")
  // are found from the working directory.
  auto built = test::run("cd " + std::string(TRAINRUN_SOURCE_DIR) + " && timeout -k 5 45 mkdocs build --strict --quiet -f " +
                         config + " -d " + (tmp / "site"));
  if (built.code != 0 && built.err.find("Unrecognised theme name") != std::string::npos)
    BROWSER_SKIP_OR_FAIL("mkdocs-material is missing; scripts/setup.sh --docs installs it:\n" + built.err);
  ASSERT_EQ(built.code, 0) << "mkdocs build --strict failed (124: timed out):\n" << built.out << built.err;

  const fs::path shot = build_dir() / "docs" / "start-page.png";
  std::error_code ec;
  fs::remove(shot, ec);
  // Chromium's temporary profile under this test's folder (TMPDIR): its processes are found by
  // that path afterwards, whatever other Chromium runs on the machine.
  const std::string profiles = tmp / "profiles";
  fs::create_directories(profiles);
  auto r = test::run("TMPDIR=" + profiles + " timeout -k 5 60 " + test::kPython + " " +
                     test::source("tests/docs/browser_check.py") + " " + (tmp / "site") + " " + shot.string() +
                     " --timeout 50");
  EXPECT_EQ(r.code, 0) << "browser_check.py (exit " << r.code << "; 1: a check failed, 2: could not check, "
                       << "124: timed out):\n" << r.out << r.err;
  if (r.code == 0) std::cout << r.out;

  ASSERT_TRUE(fs::exists(shot)) << "no screenshot of the start page at " << shot;
  EXPECT_EQ(test::read_file(shot.string()).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << shot;
  EXPECT_GT(fs::file_size(shot), 5000u) << shot << " is too small to show a page";
  std::cout << "screenshot of the start page: " << shot.string() << "\n";

  // No Chromium process outlives the check ("[b]" keeps the pattern from matching the shell
  // that runs pgrep).
  auto left = test::run("pgrep -a -f 'user-data-dir=" + profiles + "/[b]rowser-check-'");
  EXPECT_NE(left.code, 0) << "Chromium processes left running:\n" << left.out;
}

#undef BROWSER_SKIP_OR_FAIL

}  // namespace browser_check
}  // namespace
}  // namespace trainrun
