// What every fuzz target shares: where its input goes (a file on tmpfs, since the readers take
// paths, as trainrun's callers do) and what counts as a finding. A reader may turn an input down
// only with the error the CLI turns into one clear line (RecipeError, DataError, WeightsError,
// CheckpointError); any other exception escaping it (a bare std::out_of_range from stoll, a json
// type_error, a c10::Error from a tensor op) is as much a bug as a crash: abort() with its text.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>

namespace trainrun::fuzz {

// A folder of its own per fuzzing process, on tmpfs where there is one: inputs are written there
// and read back by path.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    std::filesystem::path d = base / ("trainrun-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch(), ec); });
    return d;
  }();
  return dir;
}

// The harness's own work (writing the input, copying the fixture) failing is not the reader's
// finding: it says so in a line of its own, `harness: ...`, before the abort libFuzzer reports as
// a deadly signal. An exception escaping the harness's own file operations would otherwise end in
// std::terminate: the same deadly signal, with nothing saying whose it was.
template <class F>
void harness_step(const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: %s failed: %s\n", what, e.what());
    std::abort();
  }
}

inline std::string write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {  // disk full, say
    std::fprintf(stderr, "harness: cannot write %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::abort();
  }
  return path.string();
}

inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  return write_file(scratch() / name, std::string_view(reinterpret_cast<const char*>(data), size));
}

// Runs f(); an exception of one of the Allowed types is a clean refusal, any other is a finding.
template <class... Allowed, class F>
void expect_only(F&& f) {
  try {
    try {
      f();
    } catch (const std::exception& e) {
      if (!(... || (dynamic_cast<const Allowed*>(&e) != nullptr))) {
        std::fprintf(stderr, "finding: %s escaped: %s\n", typeid(e).name(), e.what());
        std::abort();
      }
    }
  } catch (...) {
    std::fprintf(stderr, "finding: a non-std exception escaped\n");
    std::abort();
  }
}

}  // namespace trainrun::fuzz
