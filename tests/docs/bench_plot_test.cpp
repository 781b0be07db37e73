// bench/plot.py draws docs/benchmarks.md's plots from the committed results file: one PNG per
// plot the page shows, each a real, non-trivial PNG, the same bytes on a second run (no version
// or date in the file). Skipped without python3-matplotlib unless TRAINRUN_REQUIRE_DOCS_TOOLS=1.
#include "test_util.h"

#include <regex>
#include <set>

namespace trainrun {
namespace docs_bench_plot {  // named: the unity build shares anonymous namespaces

namespace fs = std::filesystem;

// The PNGs whose names start with `prefix` (docs/img also holds the guides' own images).
std::set<std::string> pngs_in(const fs::path& dir, const std::string& prefix = "") {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".png" && name.rfind(prefix, 0) == 0) out.insert(name);
  }
  return out;
}

// python3-matplotlib is optional for the suite; `make docs-check` (TRAINRUN_REQUIRE_DOCS_TOOLS=1)
// requires it.
#define SKIP_OR_FAIL_WITHOUT_MATPLOTLIB()                                                                        \
  do {                                                                                                           \
    if (test::run(std::string(test::kPython) + " -c 'import matplotlib'").code != 0) {                           \
      const char* require = std::getenv("TRAINRUN_REQUIRE_DOCS_TOOLS");                                          \
      if (require && std::string(require) == "1") FAIL() << "python3-matplotlib is missing (TRAINRUN_REQUIRE_DOCS_TOOLS=1)"; \
      GTEST_SKIP() << "python3-matplotlib is not installed";                                                     \
    }                                                                                                            \
  } while (0)

TEST(Docs, BenchPlotDrawsEveryPlotOfThePage) {
  SKIP_OR_FAIL_WITHOUT_MATPLOTLIB();
  test::TempDir dir;
  const std::string plot = std::string(test::kPython) + " " + test::source("bench/plot.py") + " " +
                           test::source("bench/results/bench-readme.json") + " --out ";
  auto first = test::run(plot + (dir / "a"));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto second = test::run(plot + (dir / "b"));
  ASSERT_EQ(second.code, 0) << second.err;

  // the page's images are exactly what plot.py writes
  const std::string page = test::read_file(test::source("docs/benchmarks.md"));
  std::set<std::string> shown;
  const std::regex image(R"(!\[([^\]]+)\]\(img/(bench-[\w-]+\.png)\))");
  for (std::sregex_iterator i(page.begin(), page.end(), image), end; i != end; ++i) {
    EXPECT_GE((*i)[1].length(), 40u) << (*i)[2] << ": alt text says what the plot shows";
    shown.insert((*i)[2]);
  }
  const auto written = pngs_in(dir / "a");
  EXPECT_EQ(written, shown);
  EXPECT_EQ(written, pngs_in(test::source("docs/img"), "bench-")) << "docs/img/bench-*.png: rerun bench/plot.py";
  EXPECT_GE(written.size(), 5u);

  for (const auto& name : written) {
    const std::string png = test::read_file(dir / ("a/" + name));
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << name;
    EXPECT_GT(png.size(), 10000u) << name;
    EXPECT_EQ(png.find("matplotlib"), std::string::npos) << name << " carries its Software tag";
    EXPECT_EQ(png, test::read_file(dir / ("b/" + name))) << name << " differs between two runs";
  }
}

// `bench/compare --plot DIR` hands plot.py the committed tables and its own run's figures
// (bench/results/compare-basicnet-1x1-2026-11-27.json: what `bench/compare --rows basicnet-1x1
// --rounds 1 --steps 20 --plot DIR` wrote at 18d467a on the 2-core development machine); the run
// is drawn as one more CPU table, its date from the run's title.
TEST(Docs, BenchPlotDrawsACompareRunAsOneMoreTable) {
  SKIP_OR_FAIL_WITHOUT_MATPLOTLIB();
  test::TempDir dir;
  const std::string base = std::string(test::kPython) + " " + test::source("bench/plot.py") + " " +
                           test::source("bench/results/bench-readme.json");
  auto without = test::run(base + " --out " + (dir / "a"));
  ASSERT_EQ(without.code, 0) << without.err;
  auto with = test::run(base + " " + test::source("bench/results/compare-basicnet-1x1-2026-11-27.json") + " --out " + (dir / "b"));
  ASSERT_EQ(with.code, 0) << with.out << with.err;
  EXPECT_EQ(pngs_in(dir / "b"), pngs_in(dir / "a"));
  // the CPU rows' plot gains the run; the GPU plot has nothing of it
  EXPECT_NE(test::read_file(dir / "b/bench-cpu-rows.png"), test::read_file(dir / "a/bench-cpu-rows.png"));
  EXPECT_EQ(test::read_file(dir / "b/bench-gpu.png"), test::read_file(dir / "a/bench-gpu.png"));
}

}  // namespace docs_bench_plot
}  // namespace trainrun
