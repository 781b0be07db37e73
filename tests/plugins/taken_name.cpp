// A test plugin (tests/registry/plugin_test.cpp) registering the callback named by TAKEN_NAME:
// built twice with "plugin_twice" (two libraries taking one new name) and once with
// "early_stopping" (a built-in's name).
#include "components/callbacks/callback.h"

#include <memory>

namespace {

std::shared_ptr<trainrun::Callback> make_taken_name_callback(const trainrun::Config&) {
  return std::make_shared<trainrun::Callback>();
}

TRAINRUN_REGISTER(trainrun::Callback, TAKEN_NAME, "a test plugin's callback", trainrun::Schema(), make_taken_name_callback);

}  // namespace
