// What the augment transforms (augment_*.cpp) share, internal to components/data: their draws
// from the loader's per-example generator, torch's float32 linspace their magnitudes and kernels
// are computed with, and the readers of the parameters more than one of them takes.
#pragma once

#include "components/data/transform.h"
#include "components/data/transform_params.h"

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

inline int64_t draw_index(int64_t n, Rng& rng) { return int64_t(rng() % uint64_t(n)); }
inline double draw_uniform(double lo, double hi, Rng& rng) { return lo + (hi - lo) * uniform01(rng); }

inline at::Tensor float_linspace(double start, double end, int64_t steps) {
  return at::linspace(start, end, steps, at::TensorOptions().dtype(at::kFloat));
}

inline std::vector<double> fill_of(const Config& c) { return c.is_null("fill") ? std::vector<double>{} : numbers(c, "fill"); }

// [lo, hi] with lo <= hi.
inline std::array<double, 2> ordered_pair(const Config& c, const std::string& key) {
  auto v = pair_of(c, key);
  return {v[0], v[1]};
}

inline Schema fill_param(Schema s) {
  s.add("fill", Type::FloatList, YAML::Node(), "value of pixels outside the image: one, or one per channel (null = 0)")
      .nullable().scalar_ok().range(0, 255);
  return s;
}

}  // namespace trainrun
