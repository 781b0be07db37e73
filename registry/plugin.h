// Plugins: shared libraries built against trainrun_core whose components register themselves
// when loaded (a callback, a model, a dataset, ... from outside the tree). Recipes name them in
// `plugins:`; TRAINRUN_PLUGINS (colon-separated) loads them for every command (list, describe).
#pragma once

#include <string>

namespace trainrun {

// Loads `path` once (dlopen, symbols resolved now). First reads its ABI record (plugin_abi.h) from
// the file: one built for another trainrun, LibTorch or C++ string ABI, or without a record, is
// refused before any of its code runs. Throws RecipeError (exit 2) naming both sides for that,
// for a plugin registering a name already taken (naming both libraries), and with the loader's
// reason when it cannot be loaded.
void load_plugin(const std::string& path);

// The plugins TRAINRUN_PLUGINS names, if set.
void load_plugins_from_environment();

}  // namespace trainrun
