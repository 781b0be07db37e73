// The lists that choose parts of the suite (tests/second_stack.txt: what CI's Debian 13 stage runs;
// tests/asan_selection.txt: what CI's AddressSanitizer run takes; tests/heavy_tests.txt: what
// `make test-quick` leaves out), held
// against the tests ctest really has (`ctest -N` in this build): every group is placed once in
// each of the first two, and no name or pattern of any list has gone stale (a renamed group would
// otherwise drop out of a stage, or back into a bounded run, without a word).
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <unistd.h>

namespace trainrun {
namespace {

// The test names ctest runs in this build, as `Group.Name` or `Prefix/Group.Name/param`.
std::vector<std::string> ctest_names() {
  const test::RunResult r = test::run(std::string("cd '") + TRAINRUN_BUILD_DIR + "' && '" + TRAINRUN_CTEST + "' -N");
  EXPECT_EQ(r.code, 0) << r.err;
  static const std::regex line(R"(^\s*Test\s+#\d+: (\S+).*)");  // a parameterised test adds "  # GetParam() = ..."
  std::vector<std::string> names;
  std::istringstream in(r.out);
  for (std::string s; std::getline(in, s);) {
    std::smatch m;
    if (std::regex_match(s, m, line)) names.push_back(m[1]);
  }
  return names;
}

// The part of a test's name before its first '.' or '/': `BadInput` of `BadInput.KilledRank`,
// `Models` of `Models/ResNetParity.X/resnet18`.
std::string group_of(const std::string& name) { return name.substr(0, name.find_first_of("./")); }

// The lines of a list, comments and blank lines skipped, each with its line number.
std::vector<std::pair<int, std::string>> numbered_lines(const std::string& file) {
  std::ifstream in(test::source(file));
  EXPECT_TRUE(in.good()) << file;
  std::vector<std::pair<int, std::string>> lines;
  int n = 0;
  for (std::string s; std::getline(in, s);)
    if (++n, !s.empty() && s[0] != '#') lines.emplace_back(n, s);
  return lines;
}

bool matches_a_test(const std::string& pattern, const std::vector<std::string>& names) {
  const std::regex regex(pattern);
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return std::regex_search(n, regex); });
}

// Every group of the suite on exactly one `run` or `leave` line of `file`, every named group and
// `leave-tests` pattern a real one; `extra` names groups the list may hold that this build lacks.
void expect_every_group_placed(const std::string& file, const std::set<std::string>& extra = {}) {
  const auto names = ctest_names();
  ASSERT_GT(names.size(), 100u);
  std::set<std::string> groups;
  for (const auto& n : names) groups.insert(group_of(n));
  std::map<std::string, std::string> placed;  // group -> "run" or "leave"
  for (const auto& [line, text] : numbered_lines(file)) {
    std::istringstream words(text);
    std::string kind, word;
    words >> kind;
    if (kind == "leave-tests") {
      EXPECT_TRUE(matches_a_test(text.substr(kind.size() + 1), names)) << file << ":" << line << ": matches no test";
      continue;
    }
    ASSERT_TRUE(kind == "run" || kind == "leave") << file << ":" << line << ": starts with " << kind;
    while (words >> word) {
      EXPECT_TRUE(groups.count(word) || extra.count(word)) << file << ":" << line << ": " << word << " is no group of the suite";
      EXPECT_TRUE(placed.emplace(word, kind).second) << file << ":" << line << ": " << word << " is placed twice";
    }
  }
  for (const auto& g : groups)
    EXPECT_TRUE(placed.count(g)) << g << ": in no line of " << file << " (run or leave, and why)";
}

TEST(Suite, EveryTestIsPlacedOnTheSecondStack) { expect_every_group_placed("tests/second_stack.txt"); }

// The fuzz targets' replays (`fuzz.NAME`) exist only in a build with TRAINRUN_FUZZ, the sanitizer's.
TEST(Suite, EveryTestIsPlacedInTheAsanRun) {
  expect_every_group_placed("tests/asan_selection.txt", {"fuzz"});
}

TEST(Suite, EveryHeavyGroupNamesTestsOfTheSuite) {
  const auto names = ctest_names();
  for (const auto& [line, pattern] : numbered_lines("tests/heavy_tests.txt"))
    EXPECT_TRUE(matches_a_test(pattern, names)) << "tests/heavy_tests.txt:" << line << ": " << pattern << " matches no test";
}

// Each test of this binary, as `Suite.Name`, from its own --gtest_list_tests.
std::vector<std::string> gtest_names() {
  const test::RunResult r = test::run("'/proc/" + std::to_string(::getpid()) + "/exe' --gtest_list_tests");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string suite;
  for (std::string s; std::getline(in, s);) {
    if (s.rfind("  ", 0) == 0) names.push_back(suite + s.substr(2, s.find(' ', 2) - 2));
    else if (!s.empty() && s.back() == '.') suite = s;
  }
  return names;
}

// tests/batched_tests.cmake runs the light tests a gtest suite to a process: every test of the
// binary is in exactly one ctest test's --gtest_filter (a `Suite.*` or a list of names), a test of
// tests/heavy_tests.txt alone under its own name.
TEST(Suite, EveryTestRunsInExactlyOneCtestTest) {
  const test::RunResult r = test::run(std::string("cd '") + TRAINRUN_BUILD_DIR + "' && '" + TRAINRUN_CTEST +
                                      "' --show-only=json-v1");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto all = gtest_names();
  ASSERT_GT(all.size(), 100u);
  std::map<std::string, int> runs;
  std::set<std::string> alone;  // the filters of ctest tests that run one test
  const auto listing = nlohmann::json::parse(r.out);
  for (const auto& t : listing["tests"]) {
    if (!t.contains("command")) continue;
    std::string filter;
    for (const auto& arg : t["command"])
      if (arg.get<std::string>().rfind("--gtest_filter=", 0) == 0) filter = arg.get<std::string>().substr(15);
    if (t["command"][0].get<std::string>().find("trainrun_gpu_tests") != std::string::npos) continue;
    std::istringstream parts(filter);
    for (std::string part; std::getline(parts, part, ':');) {
      if (part.size() > 2 && part.compare(part.size() - 2, 2, ".*") == 0) {
        for (const auto& n : all)
          if (n.rfind(part.substr(0, part.size() - 1), 0) == 0) ++runs[n];
      } else {
        ++runs[part];
      }
    }
    if (filter.find_first_of(":*") == std::string::npos) alone.insert(filter);
  }
  for (const auto& n : all) EXPECT_EQ(runs[n], 1) << n << " runs in " << runs[n] << " ctest tests";
  EXPECT_EQ(runs.size(), all.size()) << "a filter names a test the binary lacks";
  for (const auto& [line, pattern] : numbered_lines("tests/heavy_tests.txt")) {
    const std::regex heavy(pattern);
    for (const auto& n : all)
      if (std::regex_search(n, heavy))
        EXPECT_TRUE(alone.count(n)) << n << " (tests/heavy_tests.txt:" << line << ") is not alone";
  }
}

}  // namespace
}  // namespace trainrun
