// `cmake --install` into a prefix, and what a user then does with it (issue 30, README "Install"):
// the installed trainrun runs; each example (examples/*/CMakeLists.txt) is configured with
// find_package(trainrun) and -DCMAKE_PREFIX_PATH=prefix, built, and run: the installed trainrun
// trains with the custom_model and custom_dataset plugins, custom_callback's csv_logger writes its
// CSV, custom_loop trains and evaluates. Nothing of the build or source tree is on the include or
// library path of an example: a header or library the package lacks fails its build here. And the
// .deb that `cpack -G DEB` makes.
//
// Each test installs into a temporary folder of its own; the examples compile through ccache
// (CCACHE_BASEDIR = that folder, so the paths it hashes are the same from one run to the next).
#include "support/safetensors.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(TRAINRUN_SANITIZE_FLAGS) != "")
      GTEST_SKIP() << "a sanitizer build's libtrainrun needs the sanitizer's runtime in every program built against "
                      "it; the plain build runs these tests";
    auto r = test::run("cmake --install " TRAINRUN_BUILD_DIR " --prefix " + prefix());
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }

  std::string prefix() const { return dir / "prefix"; }
  std::string trainrun(const std::string& args) const { return prefix() + "/bin/trainrun " + args; }

  // Configures and builds examples/NAME against the installed package; its build folder.
  std::string build_example(const std::string& name) {
    const std::string build = dir / ("build-" + name);
    const std::string env = "CCACHE_BASEDIR=" + dir.path().string() + " ";
    std::string launcher = TRAINRUN_CCACHE;
    launcher = launcher.empty() || launcher.find("NOTFOUND") != std::string::npos
                   ? ""
                   : " -DCMAKE_CXX_COMPILER_LAUNCHER=" + launcher;
    auto r = test::run(env + "cmake -S " + test::source("examples/" + name) + " -B " + build +
                       " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=" TRAINRUN_CXX_COMPILER
                       " -DCMAKE_PREFIX_PATH=" + prefix() + launcher);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    r = test::run(env + "cmake --build " + build);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return build;
  }

  test::TempDir dir;
};

// Every line of a metrics.jsonl with `key`.
std::vector<nlohmann::json> lines_with(const std::string& metrics, const std::string& key) {
  std::vector<nlohmann::json> out;
  for (auto& line : test::read_jsonl(metrics))
    if (line.contains(key)) out.push_back(line);
  return out;
}

// Files under `root`, relative to it.
std::set<std::string> files_under(const fs::path& root) {
  std::set<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (!e.is_directory()) out.insert(e.path().lexically_relative(root).string());  // not relative(): it follows links
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The package names of a Depends or Provides field ("libc6 (>= 2.34), libfmt9 (>= 9.1.0+ds1)").
std::set<std::string> package_names(const std::string& field) {
  std::set<std::string> out;
  std::istringstream items(field);
  for (std::string item; std::getline(items, item, ',');) {
    auto begin = item.find_first_not_of(' ');
    if (begin != std::string::npos) out.insert(item.substr(begin, item.find_first_of(" :", begin) - begin));
  }
  return out;
}

TEST_F(Install, ThePrefixHoldsThePackageAndNothingOfTheTrees) {
  const auto files = files_under(prefix());
  for (const char* f : {"bin/trainrun", "lib/libtrainrun.so", "lib/libtrainrun.so.0.1", "lib/libtrainrun.so.0.1.0",
                        "lib/cmake/trainrun/trainrunConfig.cmake", "lib/cmake/trainrun/trainrunConfigVersion.cmake",
                        "lib/cmake/trainrun/trainrunTargets.cmake", "share/trainrun/recipes/quickstart.yaml",
                        "include/trainrun/registry/registry.h", "include/trainrun/runner/distributed/accelerator.h"})
    EXPECT_TRUE(files.count(f)) << f;
  // Headers: exactly cmake/public_headers.txt's (of runner/, the Accelerator's three).
  std::set<std::string> headers, listed;
  for (auto& f : files)
    if (f.rfind("include/trainrun/", 0) == 0) headers.insert(f.substr(17));
  std::istringstream list(test::read_file(test::source("cmake/public_headers.txt")));
  for (std::string line; std::getline(list, line);)
    if (!line.empty() && line[0] != '#') listed.insert(line);
  EXPECT_EQ(headers, listed);
  EXPECT_EQ(headers.count("runner/distributed/launcher.h"), 0u);

  // No installed file names the build or the source tree: not the CMake files, no RUNPATH
  // (bin/trainrun's is $ORIGIN/../lib), no __FILE__ in LibTorch's check messages.
  auto r = test::run("grep -rlF -e " TRAINRUN_BUILD_DIR " -e " + test::source("") + " " + prefix());
  EXPECT_EQ(r.code, 1) << "files naming the build or source tree:\n" << r.out;  // grep: 1 = no match
  r = test::run("readelf -d " + prefix() + "/bin/trainrun " + prefix() + "/lib/libtrainrun.so");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[$ORIGIN/../lib]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(TRAINRUN_BUILD_DIR), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Library soname: [libtrainrun.so.0.1]"), std::string::npos) << r.out;

  // The installed binary runs on the installed library.
  r = test::run("ldd " + prefix() + "/bin/trainrun");
  EXPECT_NE(r.out.find("libtrainrun.so.0.1 => " + prefix() + "/bin/../lib/libtrainrun.so.0.1"), std::string::npos)
      << r.out;
  r = test::run(trainrun("--version"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("trainrun ") + TRAINRUN_VERSION + "\n");
  r = test::run(trainrun("check " + prefix() + "/share/trainrun/recipes/quickstart.yaml"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// examples/custom_model: a model from a plugin, trained by the installed trainrun.
TEST_F(Install, CustomModelPluginTrains) {
  const std::string plugin = build_example("custom_model") + "/libcustom_model.so";
  auto r = test::run("TRAINRUN_PLUGINS=" + plugin + " " + trainrun("describe models/tiny_cnn"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("in_channels"), std::string::npos) << r.out;

  r = test::run(trainrun(test::source("examples/custom_model/recipe.yaml") + " 'plugins=[" + plugin +
                         "]' data.max_train_samples=1280 data.max_eval_samples=1000 train.log_every_steps=5 "
                         "output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto train = lines_with(dir / "run/metrics.jsonl", "loss");
  auto eval = lines_with(dir / "run/metrics.jsonl", "eval_accuracy");
  ASSERT_EQ(train.size(), 4u);  // 20 steps of 64, a line every 5
  EXPECT_EQ(train.back()["step"], 20);
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_EQ(eval[0]["eval_examples"], 1000);
  EXPECT_GT(eval[0]["eval_accuracy"].get<double>(), 0.4) << eval[0];  // 0.676 here; chance is 0.1
  // The weights are tiny_cnn's, under its module names.
  std::set<std::string> names;
  for (auto& [name, tensor] : load_safetensors(dir / "run/model.safetensors")) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "head.weight",
                                          "head.bias"}));
}

// examples/custom_dataset: images listed in CSV files, read by a dataset plugin.
TEST_F(Install, CustomDatasetPluginReadsTheCsv) {
  const std::string plugin = build_example("custom_dataset") + "/libcustom_dataset.so";
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/csv_images.py") + " " + (dir / "data") +
                     " 48 16");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string recipe = trainrun(test::source("examples/custom_dataset/recipe.yaml") + " 'plugins=[" + plugin +
                                      "]' data.dataset.train=" + (dir / "data/train.csv") +
                                      " data.dataset.eval=" + (dir / "data/eval.csv"));
  r = test::run(recipe + " output.dir=" + (dir / "run"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir / "run/labels.json")),
            nlohmann::json::parse(R"({"0": "dark", "1": "light"})"));
  auto eval = lines_with(dir / "run/metrics.jsonl", "eval_accuracy");
  ASSERT_EQ(eval.size(), 2u);  // 2 epochs of 48 / 16 = 3 steps
  EXPECT_EQ(eval.back()["step"], 6);
  EXPECT_EQ(eval.back()["eval_examples"], 16);
  EXPECT_EQ(eval.back()["eval_accuracy"], 1.0) << eval.back();  // pixels near 50 or near 200

  // A label the training CSV lacks: exit 2, the plugin's line naming the row.
  test::write_file(dir / "data/bad.csv", "path,label\nimages/eval_0.png,medium\n");
  r = test::run(recipe + " data.dataset.eval=" + (dir / "data/bad.csv") + " output.dir=" + (dir / "bad"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(dir / "data/bad.csv:2: label 'medium' is not one of the training CSV's classes"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "bad/metrics.jsonl"));
}

// examples/custom_callback: the CSV logger plugin writes a row per log line.
TEST_F(Install, CustomCallbackPluginWritesItsCsv) {
  const std::string plugin = build_example("custom_callback") + "/libcsv_logger.so";
  auto r = test::run(trainrun(test::source("examples/custom_callback/recipe.yaml") + " 'plugins=[" + plugin +
                              "]' data.max_train_samples=640 data.max_eval_samples=200 train.log_every_steps=2 "
                              "output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::istringstream csv(test::read_file(dir / "run/metrics.csv"));
  std::string header, row;
  ASSERT_TRUE(std::getline(csv, header));
  EXPECT_EQ(header, "step,epoch,loss,learning_rate,eval_loss,eval_accuracy");
  std::vector<std::string> steps;
  while (std::getline(csv, row)) steps.push_back(row.substr(0, row.find(',')));
  // 10 steps: a training row every 2, then the final evaluation's.
  EXPECT_EQ(steps, (std::vector<std::string>{"2", "4", "6", "8", "10", "10"}));
}

// examples/custom_loop: a program with its own loop, linked to the installed library.
TEST_F(Install, CustomLoopTrainsAndEvaluates) {
  const std::string binary = build_example("custom_loop") + "/custom_loop";
  auto r = test::run("ldd " + binary);
  EXPECT_NE(r.out.find("libtrainrun.so.0.1 => " + prefix() + "/lib/libtrainrun.so.0.1"), std::string::npos) << r.out;
  r = test::run(binary + " " + test::kFashionMnist + " 640");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto at = r.out.find("test examples 10000 accuracy ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(std::stod(r.out.substr(at + 29)), 0.3) << r.out;  // 10 steps of 64: 0.6346 here; chance is 0.1
  EXPECT_NE(r.out.find("(world size 1)"), std::string::npos) << r.out;
}

// `cpack -G DEB`: the same files under /usr, and a Depends line dpkg-shlibdeps made from what the
// binary and the library link: Debian's packages (each one installed here), the quickstart's data
// recommended.
TEST_F(Install, DebPackageDependsOnDebiansPackages) {
  auto r = test::run("cd " TRAINRUN_BUILD_DIR " && cpack -G DEB -B " + (dir / "deb"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string deb;
  for (auto& e : fs::directory_iterator(dir / "deb"))
    if (e.path().extension() == ".deb") deb = e.path().string();
  ASSERT_NE(deb, "") << r.out;
  r = test::run("dpkg-deb -f " + deb + " Package Version Depends Recommends");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("Package: trainrun\nVersion: " TRAINRUN_VERSION "\n"), 0u) << r.out;
  EXPECT_NE(r.out.find("\nRecommends: dataset-fashion-mnist\n"), std::string::npos) << r.out;
  auto at = r.out.find("Depends: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::set<std::string> names = package_names(r.out.substr(at + 9, r.out.find('\n', at) - at - 9));
  // Installed here: each a package, or a name one provides (libspdlog1.10 provides libspdlog1.10-fmt9).
  std::set<std::string> installed;
  for (auto& line : lines_of(test::run("dpkg-query -W -f='${db:Status-Abbrev}|${Package},${Provides}\n'").out))
    if (line.rfind("ii ", 0) == 0) installed.merge(package_names(line.substr(line.find('|') + 1)));
  for (auto& name : names) EXPECT_TRUE(installed.count(name)) << name << " (Depends) is no installed package";
  for (const char* prefix : {"libtorch", "libyaml-cpp", "libopencv-core", "libspdlog", "libc6"}) {
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; }))
        << prefix << " is not in Depends: " << r.out;
  }
  r = test::run("dpkg-deb -c " + deb);
  for (const char* f : {" ./usr/bin/trainrun\n", " ./usr/lib/libtrainrun.so.0.1.0\n",
                        " ./usr/include/trainrun/registry/registry.h\n", " ./usr/lib/cmake/trainrun/trainrunConfig.cmake\n",
                        " ./usr/share/trainrun/recipes/quickstart.yaml\n"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f << " is not in the .deb:\n" << r.out;
}

}  // namespace
}  // namespace trainrun
