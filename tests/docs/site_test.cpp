// The documentation site (docs/, mkdocs.yml): it builds with --strict, every link and anchor in it
// resolves, no page loads anything from another machine, and every recipe a page shows is a file
// that `trainrun check` accepts.
#include "support/photo_folder.h"
#include "test_util.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using test::run;

bool docs_tools_required() {
  const char* v = std::getenv("TRAINRUN_REQUIRE_DOCS_TOOLS");
  return v != nullptr && std::string(v) == "1";
}

// mkdocs and the material theme are optional for the suite (scripts/setup.sh --docs installs
// them); `make docs-check` sets TRAINRUN_REQUIRE_DOCS_TOOLS=1 so that their absence fails.
#define SKIP_OR_FAIL_WITHOUT_MKDOCS()                                                          \
  do {                                                                                         \
    if (run("mkdocs --version").code != 0) {                                                   \
      if (docs_tools_required()) FAIL() << "mkdocs is not installed: scripts/setup.sh --docs"; \
      GTEST_SKIP() << "mkdocs is not installed: scripts/setup.sh --docs installs it";          \
    }                                                                                          \
  } while (0)

std::vector<fs::path> files_under(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == extension) found.push_back(e.path());
  std::sort(found.begin(), found.end());
  return found;
}

TEST(Docs, SiteBuildsStrict) {
  SKIP_OR_FAIL_WITHOUT_MKDOCS();
  test::TempDir dir;
  const std::string src = TRAINRUN_SOURCE_DIR;
  // From the source folder: mkdocs.yml's snippet base_path is the repository root.
  auto built = run("cd '" + src + "' && mkdocs build --strict -f mkdocs.yml -d '" + (dir / "site") + "'");
  ASSERT_EQ(built.code, 0) << built.out << built.err;
  EXPECT_EQ(built.err.find("WARNING"), std::string::npos) << built.err;
  auto links = run("python3 '" + test::source("tests/docs/check_links.py") + "' '" + src + "' '" + (dir / "site") + "'");
  EXPECT_EQ(links.code, 0) << links.out << links.err;
}

TEST(Docs, RecipesOnPagesAreChecked) {
  const fs::path src = TRAINRUN_SOURCE_DIR;
  test::TempDir dir;
  test::write_photo_folder(dir.path());
  // `check` asks the Hub nothing; an empty HF_HOME keeps the report independent of this machine's cache.
  const std::string env = "cd '" + dir.path().string() + "' && HF_HOME='" + (dir / "hf") + "' ";
  auto recipes = files_under(src / "docs/recipes", ".yaml");
  ASSERT_FALSE(recipes.empty());
  for (const auto& recipe : recipes) {
    auto r = run(env + test::trainrun("check '" + recipe.string() + "'"));
    EXPECT_EQ(r.code, 0) << recipe << "\n" << r.err;
    EXPECT_NE(r.out.find("model: "), std::string::npos) << recipe << "\n" << r.out;
  }

  // Every snippet a page includes exists; every YAML block on a page is an included file, never a copy.
  const std::regex include(R"re(^\s*--8<--\s+"([^"]+)"\s*$)re");
  std::set<std::string> included;
  for (const auto& page : files_under(src / "docs", ".md")) {
    std::ifstream in(page);
    std::string line, previous;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch m;
      if (std::regex_match(line, m, include)) {
        EXPECT_TRUE(fs::is_regular_file(src / m[1].str())) << page << ":" << number << ": " << m[1];
        included.insert(m[1].str());
      } else if (std::regex_match(previous, std::regex(R"(\s*```ya?ml\s*)"))) {
        ADD_FAILURE() << page << ":" << number << ": a YAML block that is not a --8<-- include of a recipe file";
      }
      previous = line;
    }
  }
  for (const auto& recipe : recipes)
    EXPECT_TRUE(included.count(fs::relative(recipe, src).string()))
        << recipe << " is on no page: include it or remove it";

  // README.md's recipe is plain GitHub markdown, so a copy: the copy of docs/recipes/own-images.yaml.
  const std::string readme = test::read_file((src / "README.md").string());
  const std::string shown = test::read_file((src / "docs/recipes/own-images.yaml").string());
  EXPECT_NE(readme.find("```yaml\n" + shown + "```"), std::string::npos)
      << "README.md's recipe differs from docs/recipes/own-images.yaml";
}

}  // namespace
}  // namespace trainrun
