// Cross-validation folds of a training split, as scikit-learn splits it (sklearn/model_selection/
// _split.py, scikit-learn 1.2.1, Debian 12's python3-sklearn), with shuffle=True and
// random_state=seed:
//   - KFold: np.arange(n) shuffled, then cut into k parts, the first n % k one longer;
//   - StratifiedKFold (_make_test_folds): classes numbered in order of first appearance; fold
//     sizes per class dealt round-robin over the sorted labels; each class's fold numbers shuffled
//     (one generator for all classes, in that order) and given to its examples in index order.
// numpy's RandomState(seed) is MT19937 seeded by init_genrand (std::mt19937(seed) draws the same
// words) and its shuffle is Fisher-Yates with bounded integers by masked rejection
// (numpy/random/src/distributions: random_interval).
#pragma once

#include "components/data/dataset.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace trainrun {

// The test fold of every example, 0 .. k - 1. std::invalid_argument as scikit-learn's ValueError
// (k above the examples; stratified: k above every class's count).
std::vector<int64_t> kfold_assignment(std::size_t n, int64_t k, uint32_t seed);
std::vector<int64_t> stratified_kfold_assignment(const std::vector<int64_t>& labels, int64_t k, uint32_t seed);

// The examples of `base` at `indices`, in that order.
class IndexSubset : public Dataset {
 public:
  IndexSubset(std::shared_ptr<const Dataset> base, std::vector<std::size_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {}
  std::size_t size() const override { return indices_.size(); }
  Example get(std::size_t i) const override { return base_->get(indices_.at(i)); }
  Example get_region(std::size_t i, const RegionPicker& pick) const override { return base_->get_region(indices_.at(i), pick); }
  int64_t label(std::size_t i) const override { return base_->label(indices_.at(i)); }
  bool multilabel() const override { return base_->multilabel(); }
  std::vector<int64_t> labels(std::size_t i) const override { return base_->labels(indices_.at(i)); }
  std::optional<std::string> source_file(std::size_t i) const override { return base_->source_file(indices_.at(i)); }
  // Where example i sits in the base dataset.
  std::size_t base_index(std::size_t i) const { return indices_.at(i); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<std::size_t> indices_;
};

}  // namespace trainrun
