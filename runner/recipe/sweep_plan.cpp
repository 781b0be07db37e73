#include "runner/recipe/sweep_plan.h"

#include "support/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace trainrun {
namespace {

// A folder-name-safe copy of a value: what a path separator or a space would break becomes '_'.
std::string safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || std::string("._=+-[],").find(c) != std::string::npos) ? c : '_';
  return out;
}

SweepRun make_run(const SweepPlan& plan, int64_t number, const std::vector<std::size_t>& pick) {
  SweepRun run;
  run.number = number;
  std::string name;
  for (std::size_t k = 0; k < plan.swept.size(); ++k) {
    run.values.emplace_back(plan.swept[k].key, plan.swept[k].values[pick[k]]);
    name += (name.empty() ? "" : ",") + plan.swept[k].key + "=" + plan.swept[k].values[pick[k]];
  }
  run.folder = fmt::format("{:03d}-{}", number, safe(name).substr(0, 150));
  return run;
}

// The grid's i-th combination, the last key changing fastest.
std::vector<std::size_t> combination(const SweepPlan& plan, std::size_t i) {
  std::vector<std::size_t> pick(plan.swept.size());
  for (std::size_t k = plan.swept.size(); k-- > 0;) {
    pick[k] = i % plan.swept[k].values.size();
    i /= plan.swept[k].values.size();
  }
  return pick;
}

std::size_t grid_size(const SweepPlan& plan) {
  std::size_t n = 1;
  for (const SweptKey& k : plan.swept) n *= k.values.size();
  return n;
}

}  // namespace

std::vector<std::string> split_sweep_values(const std::string& key, const std::string& value) {
  std::vector<std::string> out;
  std::string current, closers;
  char quote = 0;
  for (char c : value) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{' || c == '(') {
      closers += c == '[' ? ']' : c == '{' ? '}' : ')';
    } else if (!closers.empty() && c == closers.back()) {
      closers.pop_back();
    } else if (c == ',' && closers.empty()) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  if (quote || !closers.empty())
    throw RecipeError(key + "=" + value + ": an unclosed " + (quote ? std::string(1, quote) : "bracket") + " in the sweep's values");
  out.push_back(current);
  for (const std::string& v : out)
    if (v.empty()) throw RecipeError(key + "=" + value + ": an empty value in the sweep's list");
  return out;
}

SweepPlan parse_sweep(const std::vector<std::string>& overrides) {
  SweepPlan plan;
  for (const std::string& o : overrides) {
    const std::size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw RecipeError(o + ": not an override; sweep takes key=value and key=a,b,c");
    const std::string key = o.substr(0, eq);
    std::vector<std::string> values = split_sweep_values(key, o.substr(eq + 1));
    if (values.size() == 1) {
      plan.fixed.push_back(o);
      continue;
    }
    if (key == "output.dir") throw RecipeError(o + ": output.dir is where the sweep's runs go; it cannot be swept");
    for (const SweptKey& k : plan.swept)
      if (k.key == key) throw RecipeError(o + ": " + key + " is swept twice; give its values in one list");
    plan.swept.push_back({key, std::move(values)});
  }
  return plan;
}

std::vector<std::string> SweepRun::overrides() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : values) out.push_back(key + "=" + value);
  return out;
}

std::vector<SweepRun> grid_runs(const SweepPlan& plan) {
  std::vector<SweepRun> runs;
  for (std::size_t i = 0; i < grid_size(plan); ++i) runs.push_back(make_run(plan, int64_t(i), combination(plan, i)));
  return runs;
}

std::vector<SweepRun> random_runs(const SweepPlan& plan, int64_t count, uint64_t seed) {
  const std::size_t n = grid_size(plan);
  if (count < 1 || std::size_t(count) > n)
    throw RecipeError(fmt::format("sweep: --random {}: the grid has {} combination{}; draw 1 to {}", count, n,
                                  n == 1 ? "" : "s", n));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i-- > 1;) std::swap(order[i], order[std::size_t(rng() % (i + 1))]);
  std::vector<SweepRun> runs;
  for (int64_t r = 0; r < count; ++r) runs.push_back(make_run(plan, r, combination(plan, order[std::size_t(r)])));
  return runs;
}

}  // namespace trainrun
