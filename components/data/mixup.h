// timm's Mixup (batch mode) as a batch transform; its draw and its mixing apart, for the tests
// to force a draw. See mixup.cpp.
#pragma once

#include "components/data/batch_transform.h"

#include <array>

namespace trainrun {

struct MixupOptions {
  double mixup_alpha = 1.0, cutmix_alpha = 0.0, prob = 1.0, switch_prob = 0.5;
  bool correct_lam = true;
  double label_smoothing = 0.1;
};

// One batch's draw: lambda (1 = not mixed), mixup or CutMix, and CutMix's box (y low, y high,
// x low, x high) before the lambda correction.
struct MixDraw {
  double lam = 1.0;
  bool cutmix = false;
  std::array<int64_t, 4> box{0, 0, 0, 0};
};

class Mixup : public BatchTransform {
 public:
  explicit Mixup(MixupOptions o) : o_(o) {}
  void operator()(Batch& batch, const BatchContext& context, Rng& rng) const override;
  bool makes_probabilities() const override { return true; }
  MixDraw draw(int64_t height, int64_t width, Rng& rng) const;
  // Mixes `batch` as drawn; returns the lambda its targets were mixed with (CutMix's corrected).
  double apply(Batch& batch, const MixDraw& draw, int64_t num_classes) const;

 private:
  MixupOptions o_;
};

}  // namespace trainrun
