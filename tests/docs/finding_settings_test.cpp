// docs/guides/finding-settings.md where `make demo` leaves a user (a finished quickstart in
// runs/quickstart): its commands (docs/commands/lr-find.sh, sweep.sh, cv.sh, which the page
// includes) run at a small size (kSmall appended), each printing every line of the output the page
// shows after it (numbers, which a small run changes, compared as numbers); the demo's run is left
// as it was, beside the folders the commands add.
#include "support/finished_demo.h"
#include "test_util.h"

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace trainrun {
namespace finding_settings_page {  // named: the unity build shares anonymous namespaces

namespace fs = std::filesystem;

constexpr const char* kSmall = " data.max_train_samples=500 data.max_eval_samples=100";

// A line with every number written as N and each run of spaces as one (tables align by width).
std::string shape(const std::string& line) {
  static const std::regex number(R"(-?\d+(\.\d+)?(e[-+]?\d+)?)"), spaces(" +");
  std::string s = std::regex_replace(std::regex_replace(line, number, "N"), spaces, " ");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The ```text block that follows the page's ```sh block including docs/commands/NAME.sh.
std::vector<std::string> shown_output(const std::string& page, const std::string& name) {
  const std::size_t include = page.find("--8<-- \"docs/commands/" + name + ".sh\"");
  EXPECT_NE(include, std::string::npos) << name;
  const std::size_t open = page.find("```text\n", include), close = page.find("\n```", open + 8);
  EXPECT_NE(open, std::string::npos) << name;
  std::vector<std::string> lines;
  std::istringstream in(page.substr(open + 8, close - open - 8));
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l != "...") lines.push_back(l);
  return lines;
}

TEST(DocsAfterDemo, FindingSettingsCommandsPrintWhatThePageShows) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const fs::path work = dir / "work";
  fs::create_directories(work / "build");
  fs::create_symlink(TRAINRUN_BINARY, work / "build/trainrun");
  fs::create_directory_symlink(test::source("recipes"), work / "recipes");
  const std::string made = test::add_finished_demo(work);
  ASSERT_TRUE(fs::is_regular_file(work / "runs/quickstart/model.safetensors")) << made;
  const auto demo = test::snapshot(work / "runs/quickstart");
  const std::string page = test::read_file(test::source("docs/guides/finding-settings.md"));
  for (const std::string name : {"lr-find", "sweep", "cv"}) {
    std::string line = test::read_file(test::source("docs/commands/" + name + ".sh"));
    line = line.substr(0, line.find('\n'));
    auto r = test::run("cd '" + work.string() + "' && " + line + kSmall + " 2>&1");
    ASSERT_EQ(r.code, 0) << line << "\n" << r.out;
    std::set<std::string> printed;
    std::istringstream out(r.out);
    for (std::string l; std::getline(out, l);) printed.insert(shape(l));
    for (const std::string& l : shown_output(page, name))
      EXPECT_TRUE(printed.count(shape(l))) << name << ": the page shows\n  " << l << "\nwhich the command did not print:\n" << r.out;
  }
  EXPECT_TRUE(fs::is_regular_file(work / "runs/quickstart/lr_find/lr_find.png"));
  EXPECT_TRUE(fs::is_regular_file(work / "runs/quickstart/sweep/sweep_report.md"));
  EXPECT_TRUE(fs::is_regular_file(work / "runs/quickstart/oof_predictions.csv"));
  // The demo's own files are as they were.
  auto after = test::snapshot(work / "runs/quickstart");
  for (auto it = after.begin(); it != after.end();)
    it = demo.count(it->first) ? std::next(it) : after.erase(it);
  EXPECT_EQ(after, demo);
}

}  // namespace finding_settings_page
}  // namespace trainrun
