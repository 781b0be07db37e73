#include "registry/plugin.h"

#include "registry/registry.h"
#include "support/errors.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace trainrun {
namespace {

std::string& loading() {
  static std::string path;
  return path;
}

// Names a plugin took that were taken already, while it loaded: "models/foo" -> first origin.
std::vector<std::pair<std::string, std::string>>& conflicts() {
  static std::vector<std::pair<std::string, std::string>> list;
  return list;
}

// The library trainrun's built-in components live in (for messages).
std::string trainrun_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_being_loaded), &info) && info.dli_fname) return info.dli_fname;
  return "trainrun";
}

// The ABI record in a library's .trainrun_abi section (plugin_abi.h), read from the file without
// loading it; nullopt when the file is an ELF object without one. Throws RecipeError for a file
// that is not an ELF shared object (the loader's own reason is kept for a missing file).
std::optional<std::string> abi_record(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string(TRAINRUN_ABI_RECORD);  // dlopen says why (no such file, ...)
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<std::string> record;
  std::size_t names = 0;
  const bool is_elf = elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &names) == 0;
  for (Elf_Scn* section = nullptr; is_elf && !record && (section = elf_nextscn(elf, section));) {
    GElf_Shdr header;
    const char* name = gelf_getshdr(section, &header) ? elf_strptr(elf, names, header.sh_name) : nullptr;
    Elf_Data* data = name && std::strcmp(name, ".trainrun_abi") == 0 ? elf_getdata(section, nullptr) : nullptr;
    if (data && data->d_buf) record = std::string(static_cast<const char*>(data->d_buf), strnlen(static_cast<const char*>(data->d_buf), data->d_size));
  }
  if (elf) elf_end(elf);
  ::close(fd);
  if (!is_elf) throw RecipeError("cannot load " + path + ": not an ELF shared library");
  return record;
}

void check_abi(const std::string& path) {
  const std::optional<std::string> record = abi_record(path);
  if (!record)
    throw RecipeError("cannot load " + path + ": it carries no trainrun ABI record (not built against trainrun's headers); "
                      "rebuild it against this trainrun (" TRAINRUN_ABI_RECORD ")");
  if (*record != TRAINRUN_ABI_RECORD)
    throw RecipeError("cannot load " + path + ": built for " + *record + ", but this is " TRAINRUN_ABI_RECORD " (" +
                      trainrun_library() + "): rebuild the plugin against this trainrun");
}

}  // namespace

const std::string& plugin_being_loaded() { return loading(); }

void name_taken(const std::string& kind, const std::string& name, const std::string& first_origin) {
  const std::string first = first_origin.empty() ? "built into trainrun (" + trainrun_library() + ")" : "registered by " + first_origin;
  if (loading().empty()) throw std::logic_error(kind + "/" + name + " registered twice (first " + first + ")");
  conflicts().emplace_back(kind + "/" + name, first);
}

void load_plugin(const std::string& path) {
  check_abi(path);
  loading() = path;
  conflicts().clear();
  // RTLD_GLOBAL: a plugin may build on another one's symbols; handles are kept for the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  loading().clear();
  if (!handle) {
    const char* why = dlerror();
    throw RecipeError("cannot load " + path + ": " + (why ? why : "unknown reason"));
  }
  // Its other components stay registered (its code cannot be unloaded safely once it ran); the
  // command stops here with exit 2.
  if (!conflicts().empty())
    throw RecipeError("cannot load " + path + ": it registers " + conflicts().front().first + ", which is " +
                      conflicts().front().second + " already");
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
        throw RecipeError(std::string("TRAINRUN_PLUGINS: ") + e.what());
      }
    }
}

}  // namespace trainrun
