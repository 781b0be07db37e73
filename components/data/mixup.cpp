// Mixup and CutMix on a collated batch, as timm's Mixup in its `batch` mode (timm/data/mixup.py):
// one draw per batch decides whether to mix (prob), which of the two (switch_prob when both
// alphas are set) and lambda ~ Beta(alpha, alpha); mixup blends each image with the batch's
// reversed order (x.flip(0)), CutMix pastes a box of the reversed batch, whose area corrects
// lambda; targets become mixup_target's smoothed one-hot rows, mixed by lambda. timm asserts an
// even batch; here an odd one (an epoch's last) mixes its middle example with itself.
#include "components/data/batch_transform.h"
#include "components/data/mixup.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace trainrun {

namespace {

// Beta(a, a) from two gamma draws (numpy's own method for a, b > 1 differs; the distribution is the same).
double beta_draw(double a, Rng& rng) {
  std::gamma_distribution<double> gamma(a, 1.0);
  const double x = gamma(rng), y = gamma(rng);
  return x + y > 0 ? x / (x + y) : 0.5;
}

// np.random.randint(lo, hi): uniform in [lo, hi).
int64_t randint(int64_t lo, int64_t hi, Rng& rng) {
  return lo + int64_t(uniform01(rng) * double(hi - lo));
}

}  // namespace

MixDraw Mixup::draw(int64_t height, int64_t width, Rng& rng) const {
  MixDraw d;
  if (!(uniform01(rng) < o_.prob)) return d;
  double lam;
  if (o_.mixup_alpha > 0 && o_.cutmix_alpha > 0) {
    d.cutmix = uniform01(rng) < o_.switch_prob;
    lam = beta_draw(d.cutmix ? o_.cutmix_alpha : o_.mixup_alpha, rng);
  } else if (o_.mixup_alpha > 0) {
    lam = beta_draw(o_.mixup_alpha, rng);
  } else {
    d.cutmix = true;
    lam = beta_draw(o_.cutmix_alpha, rng);
  }
  d.lam = lam;
  if (d.cutmix) {  // rand_bbox: a box of side sqrt(1 - lam) around a uniform centre
    const double ratio = std::sqrt(1.0 - lam);
    const int64_t cut_h = int64_t(double(height) * ratio), cut_w = int64_t(double(width) * ratio);
    const int64_t cy = randint(0, height, rng), cx = randint(0, width, rng);
    d.box = {std::clamp<int64_t>(cy - cut_h / 2, 0, height), std::clamp<int64_t>(cy + cut_h / 2, 0, height),
             std::clamp<int64_t>(cx - cut_w / 2, 0, width), std::clamp<int64_t>(cx + cut_w / 2, 0, width)};
  }
  return d;
}

double Mixup::apply(Batch& batch, const MixDraw& d, int64_t num_classes) const {
  at::Tensor& x = batch.inputs;
  double lam = d.lam;
  if (d.cutmix) {
    auto [yl, yh, xl, xh] = d.box;
    const int64_t h = x.size(-2), w = x.size(-1);
    if (o_.correct_lam) lam = 1.0 - double((yh - yl) * (xh - xl)) / double(h * w);
    if (lam != 1.0) {
      at::Tensor region = x.flip(0).slice(2, yl, yh).slice(3, xl, xh);
      x.slice(2, yl, yh).slice(3, xl, xh).copy_(region);
    }
  } else if (lam != 1.0) {
    at::Tensor flipped = x.flip(0).mul_(1.0 - lam);
    x.mul_(lam).add_(flipped);
  }
  // mixup_target: every batch's targets are probabilities, mixed or not (lam 1: just smoothed).
  at::Tensor y1 = soft_targets(batch.targets, num_classes, o_.label_smoothing);
  batch.targets = y1 * lam + y1.flip(0) * (1.0 - lam);
  return lam;
}

void Mixup::operator()(Batch& batch, const BatchContext& context, Rng& rng) const {
  apply(batch, draw(batch.inputs.size(-2), batch.inputs.size(-1), rng), context.num_classes);
}

TRAINRUN_REGISTER(
    BatchTransform, "mixup",
    "timm's Mixup/CutMix in batch mode: one lambda per batch, images mixed with the reversed batch, "
    "targets as smoothed, mixed probabilities",
    Schema()
        .add("mixup_alpha", Type::Float, yaml("1.0"), "mixup's Beta(alpha, alpha); 0 = no mixup").min(0)
        .add("cutmix_alpha", Type::Float, yaml("0.0"), "CutMix's Beta(alpha, alpha); 0 = no CutMix").min(0)
        .add("prob", Type::Float, yaml("1.0"), "probability that a batch is mixed at all").range(0, 1)
        .add("switch_prob", Type::Float, yaml("0.5"), "with both alphas set: probability of CutMix rather than mixup")
        .range(0, 1)
        .add("correct_lam", Type::Bool, yaml("true"), "CutMix: lambda from the box's area after clipping to the image")
        .add("label_smoothing", Type::Float, yaml("0.1"), "the targets' smoothing (timm's default 0.1)").range(0, 1),
    [](const Config& c) {
      MixupOptions o;
      o.mixup_alpha = c.get<double>("mixup_alpha");
      o.cutmix_alpha = c.get<double>("cutmix_alpha");
      o.prob = c.get<double>("prob");
      o.switch_prob = c.get<double>("switch_prob");
      o.correct_lam = c.get<bool>("correct_lam");
      o.label_smoothing = c.get<double>("label_smoothing");
      if (o.mixup_alpha <= 0 && o.cutmix_alpha <= 0)
        throw std::invalid_argument("mixup_alpha and cutmix_alpha are both 0: one must be > 0");
      return std::make_shared<Mixup>(o);
    });

}  // namespace trainrun
