// `trainrun sweep`'s combinations, from overrides in Hydra's multirun syntax (`key=a,b,c`: one run
// per value; a comma inside brackets, braces or quotes belongs to its value, so `key=[1,2],[3,4]`
// is two values and `key=[1,2]` one). Every combination of the swept keys (Hydra's BasicSweeper:
// itertools.product in the order given, the last key changing fastest), or N of them drawn
// without repetition (--random N --seed S). Each run's folder is NNN-key=value,... (its number,
// then the swept values).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

struct SweptKey {
  std::string key;
  std::vector<std::string> values;
};

struct SweepPlan {
  std::vector<std::string> fixed;  // overrides every run gets, as given
  std::vector<SweptKey> swept;
};

// RecipeError for an override that is not key=value, a key swept twice, or output.dir swept.
SweepPlan parse_sweep(const std::vector<std::string>& overrides);

// `value` split at its top-level commas (none: one value). RecipeError on an empty value or an
// unclosed bracket, naming `key`.
std::vector<std::string> split_sweep_values(const std::string& key, const std::string& value);

struct SweepRun {
  int64_t number = 0;
  std::vector<std::pair<std::string, std::string>> values;  // key, value, in the plan's order
  std::string folder;                                       // NNN-key=value,...
  std::vector<std::string> overrides() const;               // key=value, ...
};

std::vector<SweepRun> grid_runs(const SweepPlan& plan);
// `count` combinations of the grid in an order drawn from `seed` (a Fisher-Yates shuffle of the
// grid's indices with std::mt19937_64, so the same on every machine); RecipeError when the grid
// has fewer.
std::vector<SweepRun> random_runs(const SweepPlan& plan, int64_t count, uint64_t seed);

}  // namespace trainrun
