// Readers of the list-valued transform parameters, shared by transforms.cpp and the augment_*.cpp
// transforms (internal to components/data).
#pragma once

#include "registry/registry.h"

#include <string>
#include <vector>

namespace trainrun {

// `key: 0.5` or `key: [0.5, 0.7]` as a list of numbers.
std::vector<double> numbers(const Config& c, const std::string& key);

// `key: [min, max]` with min <= max; throws naming the key otherwise.
std::vector<double> pair_of(const Config& c, const std::string& key);

}  // namespace trainrun
