// What every fuzz target shares: where its input goes (a file on tmpfs, since the readers take
// paths, as trainrun's callers do) and what counts as a finding. A reader may turn an input down
// only with the error the CLI turns into one clear line (RecipeError, DataError, WeightsError,
// CheckpointError); any other exception escaping it (a bare std::out_of_range from stoll, a json
// type_error, a c10::Error from a tensor op) is as much a bug as a crash: abort() with its text.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

namespace trainrun::fuzz {

// A folder of its own per fuzzing process, on tmpfs where there is one: inputs are written there
// and read back by path. Removed at exit by the destructor of the static that names it: an
// atexit() handler registered while that static was being built ran after its destructor (handlers
// run in reverse order of registration) and removed "" instead, leaving every run's folder, ~10 MB
// for the checkpoint target, in /dev/shm. Folders of earlier runs whose process is gone (killed, or
// a libFuzzer child ended with _Exit) are removed when a run starts.
inline const std::filesystem::path& scratch() {
  struct Folder {
    std::filesystem::path dir;
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Folder folder = [] {
    namespace fs = std::filesystem;
    fs::path base = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    std::error_code ec;
    for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.rfind("trainrun-fuzz-", 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + 14, nullptr, 10);
      std::error_code ignored;
      if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove_all(it->path(), ignored);
    }
    fs::path d = base / ("trainrun-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return Folder{d};
  }();
  return folder.dir;
}

// The harness's own work (writing the input, copying the fixture) failing is not the reader's
// finding: it says so in a line of its own, `harness: ...`, before the abort libFuzzer reports as
// a deadly signal. An exception escaping the harness's own file operations would otherwise end in
// std::terminate: the same deadly signal, with nothing saying whose it was.
// A step interrupted by a signal is run again. libFuzzer's -timeout sets an interval timer whose
// SIGALRM handler is installed without SA_RESTART (FuzzerUtilPosix.cpp's SetSigaction), so a
// sendfile in std::filesystem::copy can fail with EINTR, which libstdc++ reports as a
// filesystem_error ("cannot copy: Interrupted system call") rather than retrying: CI's "deadly
// signal" of the checkpoint target with no sanitizer report (before the harness named its own
// failures, that exception ended in terminate). Each step is whole on its own (remove, then copy;
// remove a file), so running it again is safe. fuzz/alarm_storm.sh checks it.
template <class F>
void harness_step(const char* what, F&& f) {
  for (int attempt = 1;; ++attempt) {
    try {
      f();
      return;
    } catch (const std::filesystem::filesystem_error& e) {
      if (e.code() == std::errc::interrupted && attempt < 100) continue;
      std::fprintf(stderr, "harness: %s failed: %s\n", what, e.what());
      std::abort();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "harness: %s failed: %s\n", what, e.what());
      std::abort();
    }
  }
}

// The input written whole (an interrupted write is written again: see harness_step).
inline std::string write_file(const std::filesystem::path& path, std::string_view bytes) {
  for (int attempt = 1;; ++attempt) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (out) return path.string();
    if (errno == EINTR && attempt < 100) continue;
    std::fprintf(stderr, "harness: cannot write %s (%zu bytes): %s\n", path.c_str(), bytes.size(), std::strerror(errno));
    std::abort();
  }
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
