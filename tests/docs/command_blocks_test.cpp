// Every command a page of the site shows (its ```sh blocks; the newcomer's path, included from
// docs/commands/, is run by Docs.NewcomerPathCommandsRun) is run or checked by
// tests/docs/command_blocks.py: trainrun's check/describe commands run, training commands
// `trainrun check`-ed with their recipe and overrides, torchrun's options parsed by torch's own
// parser, make targets dry-run; each command no rule takes is listed there with the test or CI
// stage that runs it, and any other command fails this test. Outside `Docs.` so that CI's docs
// stage (which runs the Docs tests again with the site's tools required) does not repeat it.
#include "support/finished_demo.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace trainrun::command_blocks {

namespace {

// The script over every page, in `work`; its report is kept as build/docs/REPORT.
void run_or_check_every_command(const std::string& work, const std::string& report) {
  auto r = test::run(std::string(test::kPython) + " '" + test::source("tests/docs/command_blocks.py") + "' '" + TRAINRUN_SOURCE_DIR + "' '" +
                     TRAINRUN_BUILD_DIR + "' '" + work + "'");
  // The report (one line per command: ran, checked or why not run) stays beside the build.
  std::filesystem::create_directories(std::string(TRAINRUN_BUILD_DIR) + "/docs");
  std::ofstream(std::string(TRAINRUN_BUILD_DIR) + "/docs/" + report) << r.out;
  EXPECT_EQ(r.code, 0) << r.err << "\n" << r.out;
  EXPECT_NE(r.out.find(" commands on the pages; 0 failed or not taken"), std::string::npos) << r.out;
}

}  // namespace

TEST(DocsCommands, EveryCommandOnAPageIsRunOrChecked) {
  test::TempDir dir;
  run_or_check_every_command(dir / "work", "commands.txt");
}

// The same where the README's first command leaves a user (a finished quickstart in runs/).
TEST(DocsAfterDemo, EveryCommandOnAPageIsRunOrChecked) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const std::string made = test::add_finished_demo(dir / "work");
  ASSERT_TRUE(std::filesystem::is_regular_file(dir / "work/runs/quickstart/model.safetensors")) << made;
  run_or_check_every_command(dir / "work", "commands-after-demo.txt");
}

}  // namespace trainrun::command_blocks
