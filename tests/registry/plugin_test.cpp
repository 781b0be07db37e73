// Plugins refused with exit 2 and one line naming both sides (docs/guides/extend.md, "Write a
// plugin"): one built for another trainrun/LibTorch ABI (before any of its code runs), one without
// an ABI record, and one registering a name another library took. The test plugins are built in tests/CMakeLists.txt.
#include "test_util.h"

#include <gtest/gtest.h>

namespace trainrun {
namespace {

std::string plugin(const std::string& name) { return std::string(TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }

TEST(Plugins, ABuiltInRecordMatchesTrainruns) {
  // The real plugin of the examples carries the record and loads.
  auto r = test::run("TRAINRUN_PLUGINS=" CSV_LOGGER_PLUGIN " " + test::trainrun("list callbacks"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("csv_logger"), std::string::npos) << r.out;
  auto record = test::run("readelf -p .trainrun_abi " CSV_LOGGER_PLUGIN);
  EXPECT_NE(record.out.find(std::string("trainrun ") + TRAINRUN_VERSION + "; LibTorch "), std::string::npos) << record.out;
}

TEST(Plugins, AnotherAbiIsRefusedBeforeItsCodeRuns) {
  test::TempDir dir;
  auto r = test::run("PLUGIN_RAN_MARKER=" + (dir / "ran") + " TRAINRUN_PLUGINS=" + plugin("plugin_foreign_abi") + " " +
                     test::trainrun("list models"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("TRAINRUN_PLUGINS: cannot load " + plugin("plugin_foreign_abi") +
                       ": built for trainrun 0.0.1; LibTorch 2.6.0; libstdc++ C++11 ABI 0, but this is trainrun " +
                       TRAINRUN_VERSION + "; LibTorch "),
            std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "ran")) << "the plugin's constructor ran";
  EXPECT_TRUE(r.out.empty()) << r.out;

  // The same from a recipe's plugins:, which names the key.
  r = test::run("PLUGIN_RAN_MARKER=" + (dir / "ran") + " " +
                test::trainrun("check " + test::source("recipes/quickstart.yaml") + " 'plugins=[" + plugin("plugin_no_record") + "]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("plugins[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot load " + plugin("plugin_no_record") + ": it carries no trainrun ABI record"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "ran")) << "the plugin's constructor ran";
}

TEST(Plugins, ATakenNameNamesBothLibraries) {
  auto r = test::run("TRAINRUN_PLUGINS=" + plugin("plugin_twice_a") + ":" + plugin("plugin_twice_b") + " " +
                     test::trainrun("list callbacks"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("cannot load " + plugin("plugin_twice_b") + ": it registers callbacks/plugin_twice, which is registered by " +
                       plugin("plugin_twice_a") + " already"),
            std::string::npos) << r.err;

  r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") + " 'plugins=[" + plugin("plugin_builtin_name") + "]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("it registers callbacks/early_stopping, which is built into trainrun ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libtrainrun"), std::string::npos) << r.err;

  // One of them alone loads.
  r = test::run("TRAINRUN_PLUGINS=" + plugin("plugin_twice_a") + " " + test::trainrun("list callbacks"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("plugin_twice"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainrun
