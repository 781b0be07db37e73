// A test plugin (tests/registry/plugin_test.cpp) as one built for another trainrun and LibTorch
// looks to load_plugin: its ABI record says so. Without a record (NO_RECORD), as a library not
// built against trainrun's headers. Its constructor leaves a file behind if it ever runs, which
// the test checks it does not: the plugin is refused before dlopen runs any of its code.
#include <cstdio>
#include <cstdlib>

#ifndef NO_RECORD
[[gnu::used, gnu::section(".trainrun_abi")]] extern const char foreign_record[] =
    "trainrun 0.0.1; LibTorch 2.6.0; libstdc++ C++11 ABI 0";
#endif

[[gnu::constructor]] static void foreign_plugin_ran() {
  if (const char* marker = std::getenv("PLUGIN_RAN_MARKER"))
    if (std::FILE* f = std::fopen(marker, "w")) std::fclose(f);
}
