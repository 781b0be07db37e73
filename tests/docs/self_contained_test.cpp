// A user has only the repository: no tracked file may send a reader to a file beside it (the
// development notes and tools that once sat in a `shared` folder next to the checkout, and the
// specification kept there), and no link or path on a page may resolve outside the checkout
// (tests/docs/check_links.py --sources, which Docs.SiteBuildsStrict also runs on the built site).
#include "test_util.h"

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace trainrun {
namespace docs_self_contained {  // named: the unity build shares anonymous namespaces

namespace fs = std::filesystem;

// Spelled in parts so that this file does not name them itself.
const std::vector<std::string> kOutside = {std::string("..") + "/shared", std::string("SPEC") + ".md",
                                           std::string("SPEC") + " \xc2\xa7"};

TEST(Docs, NoTrackedFileRefersOutsideTheRepository) {
  const std::string src = TRAINRUN_SOURCE_DIR;
  auto listed = test::run("git -c safe.directory='*' -C '" + src + "' ls-files -z");
  if (listed.code != 0) GTEST_SKIP() << "not a git checkout (git ls-files: " << listed.err << ")";
  std::vector<std::string> files;
  std::istringstream names(listed.out);
  for (std::string name; std::getline(names, name, '\0');)
    if (!name.empty()) files.push_back(name);
  ASSERT_GT(files.size(), 100u) << listed.out;

  int hits = 0;
  for (const auto& name : files) {
    const fs::path path = fs::path(src) / name;
    if (fs::is_symlink(path) || !fs::is_regular_file(path)) continue;  // a submodule, a link
    std::istringstream text(test::read_file(path.string()));
    int number = 0;
    for (std::string line; std::getline(text, line);) {
      ++number;
      for (const auto& needle : kOutside)
        if (line.find(needle) != std::string::npos) {
          ADD_FAILURE() << name << ":" << number << ": names '" << needle << "', outside the repository: say what "
                        << "it needs here, or point at a file of the repository\n  " << line;
          ++hits;
        }
    }
  }
  EXPECT_EQ(hits, 0);
}

TEST(Docs, NoLinkOrPathOnAPageLeavesTheRepository) {
  auto r = test::run(std::string(test::kPython) + " '" + test::source("tests/docs/check_links.py") + "' --sources '" +
                     TRAINRUN_SOURCE_DIR + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("check_links: sources:"), std::string::npos) << r.out << r.err;
}

}  // namespace docs_self_contained
}  // namespace trainrun
