#include "components/data/folds.h"

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

namespace trainrun {
namespace {

// numpy's random_interval(max): a value in [0, max] from 32-bit words, by masked rejection.
uint64_t random_interval(std::mt19937& rng, uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift : {1, 2, 4, 8, 16, 32}) mask |= mask >> shift;
  uint64_t value;
  while ((value = (uint64_t(rng()) & mask)) > max) {
  }
  return value;
}

// RandomState.shuffle of a 1-D array.
template <class T>
void numpy_shuffle(std::vector<T>& x, std::mt19937& rng) {
  for (std::size_t i = x.size(); i-- > 1;) std::swap(x[i], x[std::size_t(random_interval(rng, i))]);
}

void check_splits(std::size_t n, int64_t k) {
  if (k < 2) throw std::invalid_argument("k-fold cross-validation needs at least 2 folds, got " + std::to_string(k));
  if (std::size_t(k) > n)
    throw std::invalid_argument("cannot have " + std::to_string(k) + " folds of " + std::to_string(n) + " examples");
}

}  // namespace

std::vector<int64_t> kfold_assignment(std::size_t n, int64_t k, uint32_t seed) {
  check_splits(n, k);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937 rng(seed);
  numpy_shuffle(order, rng);
  std::vector<int64_t> fold(n);
  std::size_t at = 0;
  for (int64_t f = 0; f < k; ++f) {
    const std::size_t size = n / std::size_t(k) + (std::size_t(f) < n % std::size_t(k) ? 1 : 0);
    for (std::size_t j = 0; j < size; ++j) fold[order[at++]] = f;
  }
  return fold;
}

std::vector<int64_t> stratified_kfold_assignment(const std::vector<int64_t>& labels, int64_t k, uint32_t seed) {
  check_splits(labels.size(), k);
  // Classes numbered by first appearance.
  std::map<int64_t, int64_t> code;
  std::vector<int64_t> encoded(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    encoded[i] = code.emplace(labels[i], int64_t(code.size())).first->second;
  const std::size_t classes = code.size();
  std::vector<int64_t> counts(classes, 0);
  for (int64_t c : encoded) ++counts[std::size_t(c)];
  if (std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return k > c; }))
    throw std::invalid_argument("cannot have " + std::to_string(k) + " folds: more than the examples of every class");
  // allocation[f][c]: bincount(sorted(encoded)[f::k]).
  std::vector<int64_t> sorted = encoded;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<int64_t>> allocation(std::size_t(k), std::vector<int64_t>(classes, 0));
  for (std::size_t i = 0; i < sorted.size(); ++i) ++allocation[i % std::size_t(k)][std::size_t(sorted[i])];
  std::mt19937 rng(seed);
  std::vector<int64_t> fold(labels.size());
  for (std::size_t c = 0; c < classes; ++c) {
    std::vector<int64_t> folds_for_class;
    for (int64_t f = 0; f < k; ++f) folds_for_class.insert(folds_for_class.end(), std::size_t(allocation[std::size_t(f)][c]), f);
    numpy_shuffle(folds_for_class, rng);
    std::size_t next = 0;
    for (std::size_t i = 0; i < labels.size(); ++i)
      if (encoded[i] == int64_t(c)) fold[i] = folds_for_class[next++];
  }
  return fold;
}

}  // namespace trainrun
