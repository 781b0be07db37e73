#include "registry/plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace trainrun {

void load_plugin(const std::string& path) {
  // RTLD_GLOBAL: a plugin may build on another one's symbols; handles are kept for the process.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load " + path + ": " + (why ? why : "unknown reason"));
  }
}

void load_plugins_from_environment() {
  const char* list = std::getenv("TRAINRUN_PLUGINS");
  if (!list) return;
  std::stringstream paths(list);
  std::string path;
  while (std::getline(paths, path, ':'))
    if (!path.empty()) {
      try {
        load_plugin(path);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("TRAINRUN_PLUGINS: ") + e.what());
      }
    }
}

}  // namespace trainrun
