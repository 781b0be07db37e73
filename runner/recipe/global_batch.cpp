// data.global_batch_size: the accumulation a world of W processes needs to make it (preflight.h).
#include "runner/recipe/preflight.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

namespace trainrun {
namespace {

// The divisors of n nearest to `near` (at most `count`, in increasing order).
std::vector<int64_t> divisors_near(int64_t n, int64_t near, std::size_t count) {
  std::vector<int64_t> all;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) all.insert(all.end(), {d, n / d});
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::stable_sort(all.begin(), all.end(), [&](int64_t a, int64_t b) { return std::llabs(a - near) < std::llabs(b - near); });
  all.resize(std::min(all.size(), count));
  std::sort(all.begin(), all.end());
  return all;
}

std::string processes(int64_t n) { return fmt::format("{} process{}", n, n == 1 ? "" : "es"); }

}  // namespace

void fit_global_batch(Job& job, int64_t world_size) {
  const std::optional<int64_t> global = job.config.data.global_batch_size;
  if (!global) return;
  const int64_t n = *global, b = job.config.data.batch_size, w = world_size;
  int64_t& accum = job.config.train.grad_accum_steps;
  if (n % (b * w) == 0) {
    if (accum != 1 && accum != n / (b * w))
      throw RecipeError(fmt::format("data.global_batch_size: {} on {} with data.batch_size {} makes train.grad_accum_steps {}, "
                                    "but train.grad_accum_steps says {}; give one of the two",
                                    n, processes(w), b, n / (b * w), accum));
    accum = n / (b * w);
    job.notes.push_back(fmt::format("train.grad_accum_steps: {} on {} (data.global_batch_size {} / data.batch_size {} / {})",
                                    accum, processes(w), n, b, w));
    return;
  }
  std::string line = fmt::format("data.global_batch_size: {} is not data.batch_size {} x {} x a whole number of "
                                 "accumulation steps", n, b, processes(w));
  std::vector<std::string> would;
  if (n % w == 0)
    would.push_back(fmt::format("data.batch_size {} would make it on {}", fmt::join(divisors_near(n / w, b, 4), ", "),
                                processes(w)));
  if (n % b == 0)
    would.push_back(fmt::format("{} processes would with data.batch_size {}", fmt::join(divisors_near(n / b, w, 4), ", "), b));
  throw RecipeError(line + (would.empty() ? "" : "; " + fmt::format("{}", fmt::join(would, "; "))));
}

}  // namespace trainrun
