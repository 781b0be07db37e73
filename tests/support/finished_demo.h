// Where a new user stands after the README's first command: `make demo` ran `build/trainrun
// recipes/quickstart.yaml`, so runs/quickstart holds a finished quickstart (its checkpoints,
// checkpoint-best, model.safetensors). The page tests run their commands from there as well as
// from an empty folder (a finished run in the folder is what once made the pages' own commands
// resume it and train nothing).
//
// The real quickstart, unchanged, run once per build folder (about a minute on 2 cores) under a
// lock, so that tests running in parallel share one; made again when the binary or the recipe
// changes. Each test gets a copy.
#pragma once

#include "test_util.h"

#include <fcntl.h>
#include <sys/file.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace trainrun::test {

inline std::string demo_stamp() {
  const auto binary = std::filesystem::last_write_time(TRAINRUN_BINARY).time_since_epoch().count();
  return std::to_string(binary) + "\n" + read_file(source("recipes/quickstart.yaml"));
}

// Copies the finished quickstart into work/runs/quickstart (made first if needed). Returns the
// demo's output, empty when it was made by an earlier test.
inline std::string add_finished_demo(const std::filesystem::path& work) {
  namespace fs = std::filesystem;
  const fs::path home = fs::path(TRAINRUN_BUILD_DIR) / "test-fixtures/demo";
  fs::create_directories(home);
  const int lock = ::open((home / ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  ::flock(lock, LOCK_EX);
  std::string made;
  const std::string stamp = demo_stamp();
  if (read_file((home / "stamp").string()) != stamp || !fs::exists(home / "runs/quickstart/model.safetensors")) {
    fs::remove_all(home / "runs");
    fs::remove(home / "stamp");
    const RunResult demo = run("cd '" + home.string() + "' && " + trainrun(source("recipes/quickstart.yaml")));
    made = demo.out + demo.err;
    if (demo.code == 0) write_file((home / "stamp").string(), stamp);
  }
  fs::create_directories(work / "runs");
  if (fs::exists(home / "runs/quickstart"))
    fs::copy(home / "runs/quickstart", work / "runs/quickstart", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return made;
}

}  // namespace trainrun::test
