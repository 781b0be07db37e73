// Plugins: shared libraries built against trainrun_core whose components register themselves
// when loaded (a callback, a model, a dataset, ... from outside the tree). Recipes name them in
// `plugins:`; TRAINRUN_PLUGINS (colon-separated) loads them for every command (list, describe).
#pragma once

#include <string>

namespace trainrun {

// Loads `path` once (dlopen, symbols resolved now). Throws std::runtime_error with the loader's
// reason when it cannot be loaded.
void load_plugin(const std::string& path);

// The plugins TRAINRUN_PLUGINS names, if set.
void load_plugins_from_environment();

}  // namespace trainrun
