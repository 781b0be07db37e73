// The layers of the source tree (README "Layout"), checked by reading every #include: a folder
// includes only its own files and those of folders below it, so nothing below knows what is above
// (components/ and registry/ nothing of runner/, runner's folders no cycle). A test rather than
// one library per layer: per-layer shared libraries would add their load to every start (the
// first step is mostly loading, bench/README.md), and static libraries sharing one include root
// would not stop an upward #include from compiling.
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// Bottom to top. Folders of one rank (the components) include none of each other.
const std::vector<std::vector<std::string>> kLayers = {
    {"support"},                  // files, downloads, archives, the Hub, safetensors, progress, errors
    {"registry"},                 // registries, schemas, plugins
    {"components/data", "components/models", "components/optim", "components/callbacks"},
    {"runner/logging"},
    {"runner/io"},
    {"runner/distributed"},
    {"runner/recipe"},
    {"runner/train"},
    {"runner/train/callbacks"},
    {"runner/export"},             // TorchScript and ONNX files of a trained model
    {"runner/cli"},
};

// Inside components/data, bottom to top: the interfaces every concern shares (datasets, streaming
// datasets, images, transforms, batch transforms, the data errors), Pillow's arithmetic, the
// transforms, the shard reader and writer, the registered dataset sources, the loaders. A folder
// includes only those below it; to the rest of the tree they are all components/data.
const std::vector<std::string> kDataFloors = {
    "components/data",        "components/data/pil",     "components/data/transforms",
    "components/data/shards", "components/data/sources", "components/data/loader",
};

// Code outside trainrun's library that must stay on its public headers: a plugin or a program
// built against an installed trainrun (issue 30) sees only what cmake/public_headers.txt lists
// (support/, registry/, components/ but the internal headers that file names, and the Accelerator's three headers
// of runner/distributed/). Every example: each is built against the installed package by
// tests/install/install_test.cpp.
const std::vector<std::string> kPublicOnly = {"examples"};

std::map<std::string, int> layer_ranks() {
  std::map<std::string, int> rank;
  for (std::size_t i = 0; i < kLayers.size(); ++i)
    for (auto& folder : kLayers[i]) rank[folder] = int(i);
  for (auto& folder : kDataFloors) rank[folder] = rank.at("components/data");
  return rank;
}

int data_floor(const std::string& folder) {
  auto it = std::find(kDataFloors.begin(), kDataFloors.end(), folder);
  return it == kDataFloors.end() ? -1 : int(it - kDataFloors.begin());
}

// Whether a file of folder `from` may include one of folder `to` (both in a layer).
bool allowed(const std::map<std::string, int>& rank, const std::string& from, const std::string& to) {
  if (from == to) return true;
  if (data_floor(from) >= 0 && data_floor(to) >= 0) return data_floor(to) < data_floor(from);
  return rank.at(to) < rank.at(from);
}

// A header left at a path components/data/ had before its subfolders, through 0.2 (CHANGELOG.md,
// Deprecated): it includes its new path and nothing else, and nothing in the tree includes it.
bool is_forwarding_header(const std::string& file) {
  std::ifstream in(test::source(file));
  std::string first;
  std::getline(in, first);
  return first.find("this forwarding header stays through 0.2") != std::string::npos;
}

struct Include {
  std::string file;  // relative to the source tree
  int line;
  std::string target;  // as written: "runner/io/checkpoint.h"
};

// The quoted #includes of one file (`file` relative to the source tree), appended to `out`.
void add_includes_of(const std::string& file, std::vector<Include>& out) {
  static const std::regex pattern(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::ifstream in(test::source(file));
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    std::smatch m;
    if (std::regex_search(text, m, pattern)) out.push_back({file, n, m[1].str()});
  }
}

std::vector<Include> includes_under(const std::string& folder) {
  std::vector<Include> out;
  const fs::path root = test::source("");
  for (auto& entry : fs::recursive_directory_iterator(root / folder)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp"))
      add_includes_of(fs::relative(entry.path(), root).string(), out);
  }
  return out;
}

// The headers `cmake --install` installs under include/trainrun/ (cmake/public_headers.txt).
std::set<std::string> public_headers() {
  std::set<std::string> out;
  std::ifstream in(test::source("cmake/public_headers.txt"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line);
  return out;
}

std::string folder_of(const std::string& path) { return fs::path(path).parent_path().string(); }

// Every wrong edge of the tree, one line each ("file:line includes target: why").
std::vector<std::string> layer_violations() {
  const auto rank = layer_ranks();
  std::vector<std::string> bad;
  for (const char* top : {"support", "registry", "components", "runner"}) {
    for (const auto& inc : includes_under(top)) {
      const std::string from = folder_of(inc.file), to = folder_of(inc.target);
      const std::string where = inc.file + ":" + std::to_string(inc.line) + " includes " + inc.target + ": ";
      if (!rank.count(from)) {
        bad.push_back(where + "its folder " + from + " is in no layer (tests/layers_test.cpp kLayers)");
        continue;
      }
      if (from == "components/data" && is_forwarding_header(inc.file)) continue;
      if (to == from) continue;
      if (!rank.count(to)) {
        if (!fs::exists(test::source(inc.target))) continue;  // a header of a library, or one generated
        bad.push_back(where + to + " is in no layer");
      } else if (!allowed(rank, from, to)) {
        const bool same = rank.at(to) == rank.at(from) && (data_floor(from) < 0 || data_floor(to) < 0);
        bad.push_back(where + to + (same ? " is in the same layer" : " is above " + from));
      }
    }
  }
  return bad;
}

TEST(Layers, NoFolderIncludesOneAboveIt) {
  const auto bad = layer_violations();
  std::string all;
  for (auto& b : bad) all += b + "\n";
  EXPECT_TRUE(bad.empty()) << all;
}

// The old paths forward for one release; the tree itself includes the new ones.
TEST(Layers, NothingIncludesAForwardingHeader) {
  int forwarding = 0;
  for (auto& e : fs::directory_iterator(test::source("components/data")))
    if (e.path().extension() == ".h" && is_forwarding_header(fs::relative(e.path(), test::source("")).string())) ++forwarding;
  EXPECT_GE(forwarding, 10);  // augment.h ... timm_eval.h: the reader works
  for (const char* top : {"support", "registry", "components", "runner", "examples", "tests", "bench", "fuzz"}) {
    for (const auto& inc : includes_under(top)) {
      if (!fs::exists(test::source(inc.target)) || !is_forwarding_header(inc.target)) continue;
      ADD_FAILURE() << inc.file << ":" << inc.line << " includes " << inc.target << ", a forwarding header: include its new path";
    }
  }
}

TEST(Layers, EveryLibraryFolderIsInALayer) {
  const auto rank = layer_ranks();
  for (const char* top : {"support", "registry", "components", "runner"}) {
    std::set<std::string> folders = {top};
    for (auto& e : fs::recursive_directory_iterator(test::source(top)))
      if (e.is_directory()) folders.insert(fs::relative(e.path(), test::source("")).string());
    for (auto& f : folders) {
      if (f != "components" && f != "runner") {
        EXPECT_TRUE(rank.count(f)) << f << " is in no layer";
      }
    }
  }
}

// The check itself: an upward include written into a copy of the rules is caught, and so is a
// sideways one between components.
TEST(Layers, TheCheckCatchesAnUpwardInclude) {
  const auto rank = layer_ranks();
  auto ok = [&](const std::string& from, const std::string& to) { return allowed(rank, from, to); };
  EXPECT_FALSE(ok("components/data", "runner/io"));
  EXPECT_FALSE(ok("runner/io", "runner/train"));
  EXPECT_FALSE(ok("runner/train", "runner/train/callbacks"));
  EXPECT_FALSE(ok("components/data", "components/models"));
  EXPECT_FALSE(ok("registry", "components/data"));
  EXPECT_TRUE(ok("runner/train/callbacks", "runner/train"));
  EXPECT_TRUE(ok("components/data", "support"));
  // Inside components/data: no floor includes one above it; every one is components/data outside.
  EXPECT_FALSE(ok("components/data", "components/data/pil"));
  EXPECT_FALSE(ok("components/data/pil", "components/data/transforms"));
  EXPECT_FALSE(ok("components/data/shards", "components/data/sources"));
  EXPECT_FALSE(ok("components/data/sources", "components/data/loader"));
  EXPECT_TRUE(ok("components/data/loader", "components/data/shards"));
  EXPECT_TRUE(ok("components/data/transforms", "components/data"));
  EXPECT_FALSE(ok("components/data/sources", "components/models"));
  EXPECT_FALSE(ok("components/models", "components/data/loader"));
  EXPECT_TRUE(ok("runner/train", "components/data/loader"));
}

TEST(Layers, ExamplesUseThePublicHeadersOnly) {
  const auto allowed = public_headers();
  ASSERT_GT(allowed.size(), 20u);
  // The list holds the Accelerator's headers, none of the runner's internals nor OpenCV's view.
  EXPECT_TRUE(allowed.count("runner/distributed/accelerator.h"));
  EXPECT_FALSE(allowed.count("runner/train/trainer.h"));
  EXPECT_FALSE(allowed.count("components/data/cv_tensor.h"));
  int checked = 0;
  for (const auto& folder : kPublicOnly) {
    for (const auto& inc : includes_under(folder)) {
      if (!fs::exists(test::source(inc.target))) continue;  // <torch/torch.h>, <fmt/format.h>
      ++checked;
      EXPECT_TRUE(allowed.count(inc.target)) << inc.file << ":" << inc.line << " includes " << inc.target
                                             << ": not a public header (cmake/public_headers.txt)";
    }
  }
  EXPECT_GE(checked, 5);  // custom_callback, custom_dataset, custom_loop (3), custom_model
}

// What is installed is whole: a public header includes only public headers (an installed header
// including one left out would not compile for a consumer).
TEST(Layers, PublicHeadersIncludeOnlyPublicHeaders) {
  const auto allowed = public_headers();
  std::vector<Include> includes;
  for (const auto& header : allowed) {
    ASSERT_TRUE(fs::exists(test::source(header))) << header << " (cmake/public_headers.txt) does not exist";
    add_includes_of(header, includes);
  }
  EXPECT_GE(includes.size(), 20u);  // the reader works (25 today)
  for (const auto& inc : includes) {
    if (!fs::exists(test::source(inc.target))) continue;
    EXPECT_TRUE(allowed.count(inc.target)) << inc.file << ":" << inc.line << " includes " << inc.target
                                           << ", which cmake/public_headers.txt does not list";
  }
}

}  // namespace
}  // namespace trainrun
