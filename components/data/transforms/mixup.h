// timm's Mixup (batch, pair and elem modes; CutMix with cutmix_minmax) as a batch transform; its
// draw and its mixing apart, for the tests to force a draw. See mixup.cpp.
#pragma once

#include "components/data/batch_transform.h"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

struct MixupOptions {
  double mixup_alpha = 1.0, cutmix_alpha = 0.0, prob = 1.0, switch_prob = 0.5;
  bool correct_lam = true;
  double label_smoothing = 0.1;
  std::string mode = "batch";  // batch | pair | elem
  std::optional<std::pair<double, double>> cutmix_minmax;  // the box's side as fractions of the image's
};

// One batch's draw: per mixing unit (the batch, each pair i <-> B-1-i, or each example i, mixed
// with example B-1-i), lambda (1 = not mixed), mixup or CutMix, and CutMix's box (y low, y high,
// x low, x high) before the lambda correction.
struct MixDraw {
  std::vector<double> lam;
  std::vector<bool> cutmix;
  std::vector<std::array<int64_t, 4>> box;
};

class Mixup : public BatchTransform {
 public:
  explicit Mixup(MixupOptions o) : o_(std::move(o)) {}
  void operator()(Batch& batch, const BatchContext& context, Rng& rng) const override;
  bool makes_probabilities() const override { return true; }
  MixDraw draw(int64_t batch_size, int64_t height, int64_t width, Rng& rng) const;
  // Mixes `batch` as drawn; returns the lambda of each example's target (CutMix's corrected).
  std::vector<double> apply(Batch& batch, MixDraw draw, int64_t num_classes) const;
  const MixupOptions& options() const { return o_; }

 private:
  std::pair<double, bool> draw_unit(Rng& rng) const;
  std::array<int64_t, 4> draw_box(double lam, int64_t height, int64_t width, Rng& rng) const;
  double corrected(double lam, const std::array<int64_t, 4>& box, int64_t height, int64_t width) const;
  MixupOptions o_;
};

}  // namespace trainrun
