// The recipe loader (runner/recipe/recipe.cpp): YAML, command-line overrides and ${...}
// interpolation, schema checks of every section and component, then the fixed sections read into
// RunConfig, as `trainrun check` does before any data is touched. The input is up to three
// override lines (each ending in a newline, after a first line `#overrides: N`) followed by the
// recipe's text.
#include "fuzz/fuzz_util.h"
#include "runner/recipe/recipe.h"
#include "runner/recipe/run_config.h"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainrun;
  std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  const std::string head = "#overrides: ";
  if (input.rfind(head, 0) == 0 && input.size() > head.size()) {
    int n = std::min(3, std::max(0, input[head.size()] - '0'));
    size_t pos = input.find('\n');
    for (int i = 0; i < n && pos != std::string::npos; ++i) {
      size_t end = input.find('\n', pos + 1);
      overrides.push_back(input.substr(pos + 1, (end == std::string::npos ? input.size() : end) - pos - 1));
      pos = end;
    }
    input = pos == std::string::npos ? "" : input.substr(pos + 1);
  }
  std::string file = fuzz::write_file(fuzz::scratch() / "recipe.yaml", input);
  fuzz::expect_only<RecipeError>([&] {
    Recipe recipe = load_recipe(file, overrides);
    (void)RunConfig::from(recipe.root);
    (void)recipe.dump();
  });
  return 0;
}
