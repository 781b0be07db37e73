// Mixup and CutMix on a collated batch, as timm's Mixup (timm/data/mixup.py): a draw per mixing
// unit (mode batch: the batch; pair: each pair i, B-1-i; elem: each example) decides whether to
// mix (prob), which of the two (switch_prob when both alphas are set) and lambda ~ Beta(alpha,
// alpha); mixup blends an image with its partner in the reversed batch, CutMix pastes a box of it,
// whose area corrects lambda (cutmix_minmax: the box's sides drawn, lambda from them); targets
// become mixup_target's smoothed one-hot rows, mixed by each example's lambda. timm asserts an
// even batch; here an odd one (an epoch's last) leaves its middle example with itself (batch and
// elem modes mix it with itself, pair mode leaves it unmixed).
#include "components/data/batch_transform.h"
#include "components/data/transforms/mixup.h"

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

// One mixing unit's lambda and kind, as timm's _params_per_batch (and, per unit, _params_per_elem).
std::pair<double, bool> Mixup::draw_unit(Rng& rng) const {
  if (!(uniform01(rng) < o_.prob)) return {1.0, false};
  if (o_.mixup_alpha > 0 && o_.cutmix_alpha > 0) {
    const bool cutmix = uniform01(rng) < o_.switch_prob;
    return {beta_draw(cutmix ? o_.cutmix_alpha : o_.mixup_alpha, rng), cutmix};
  }
  if (o_.mixup_alpha > 0) return {beta_draw(o_.mixup_alpha, rng), false};
  return {beta_draw(o_.cutmix_alpha, rng), true};
}

// rand_bbox (a box of side sqrt(1 - lam) around a uniform centre, clipped) or, with
// cutmix_minmax, rand_bbox_minmax (sides drawn as fractions of the image's, placed inside it).
std::array<int64_t, 4> Mixup::draw_box(double lam, int64_t height, int64_t width, Rng& rng) const {
  if (o_.cutmix_minmax) {
    const double lo = o_.cutmix_minmax->first, hi = o_.cutmix_minmax->second;
    auto side = [&](int64_t n) {
      const int64_t a = int64_t(double(n) * lo), b = int64_t(double(n) * hi);
      return b > a ? randint(a, b, rng) : a;
    };
    const int64_t cut_h = side(height), cut_w = side(width);
    const int64_t yl = height > cut_h ? randint(0, height - cut_h, rng) : 0;
    const int64_t xl = width > cut_w ? randint(0, width - cut_w, rng) : 0;
    return {yl, yl + cut_h, xl, xl + cut_w};
  }
  const double ratio = std::sqrt(1.0 - lam);
  const int64_t cut_h = int64_t(double(height) * ratio), cut_w = int64_t(double(width) * ratio);
  const int64_t cy = randint(0, height, rng), cx = randint(0, width, rng);
  return {std::clamp<int64_t>(cy - cut_h / 2, 0, height), std::clamp<int64_t>(cy + cut_h / 2, 0, height),
          std::clamp<int64_t>(cx - cut_w / 2, 0, width), std::clamp<int64_t>(cx + cut_w / 2, 0, width)};
}

// cutmix_bbox_and_lam: lambda from the box's area (always with cutmix_minmax).
double Mixup::corrected(double lam, const std::array<int64_t, 4>& box, int64_t height, int64_t width) const {
  if (!o_.correct_lam && !o_.cutmix_minmax) return lam;
  return 1.0 - double((box[1] - box[0]) * (box[3] - box[2])) / double(height * width);
}

MixDraw Mixup::draw(int64_t batch_size, int64_t height, int64_t width, Rng& rng) const {
  const int64_t units = o_.mode == "batch" ? 1 : o_.mode == "pair" ? batch_size / 2 : batch_size;
  MixDraw d;
  for (int64_t u = 0; u < units; ++u) {
    auto [lam, cutmix] = draw_unit(rng);
    if (o_.mode != "batch") lam = double(float(lam));  // timm keeps per-example lambdas as float32
    d.lam.push_back(lam);
    d.cutmix.push_back(cutmix);
    d.box.push_back(cutmix ? draw_box(lam, height, width, rng) : std::array<int64_t, 4>{0, 0, 0, 0});
  }
  return d;
}

std::vector<double> Mixup::apply(Batch& batch, MixDraw d, int64_t num_classes) const {
  at::Tensor& x = batch.inputs;
  const int64_t n = x.size(0), h = x.size(-2), w = x.size(-1);
  auto paste = [](const at::Tensor& into, const at::Tensor& from, const std::array<int64_t, 4>& b) {
    into.slice(-2, b[0], b[1]).slice(-1, b[2], b[3]).copy_(from.slice(-2, b[0], b[1]).slice(-1, b[2], b[3]));
  };
  std::vector<double> lam(std::size_t(n), 1.0);
  at::Tensor y1 = soft_targets(batch.targets, num_classes, o_.label_smoothing);
  if (o_.mode == "batch") {  // _mix_batch: the whole batch with its reverse, one lambda
    double l = d.lam[0];
    if (d.cutmix[0]) {
      l = corrected(l, d.box[0], h, w);
      if (l != 1.0) paste(x, x.flip(0), d.box[0]);
    } else if (l != 1.0) {
      at::Tensor flipped = x.flip(0).mul_(1.0 - l);
      x.mul_(l).add_(flipped);
    }
    batch.targets = y1 * l + y1.flip(0) * (1.0 - l);
    return std::vector<double>(std::size_t(n), l);
  }
  // _mix_elem / _mix_pair: example i with example B-1-i, from an unmixed copy.
  const at::Tensor original = x.clone();
  const bool pair = o_.mode == "pair";
  for (int64_t i = 0; i < int64_t(d.lam.size()); ++i) {
    const int64_t j = n - i - 1;
    double l = d.lam[std::size_t(i)];
    if (l == 1.0) continue;
    if (d.cutmix[std::size_t(i)]) {
      const auto& b = d.box[std::size_t(i)];
      l = double(float(corrected(l, b, h, w)));
      paste(x[i], original[j], b);
      if (pair) paste(x[j], original[i], b);
    } else {
      const double rest = double(1.0f - float(l));  // numpy: 1 - float32 stays float32
      x[i].copy_(original[i] * l + original[j] * rest);
      if (pair) x[j].copy_(original[j] * l + original[i] * rest);
    }
    lam[std::size_t(i)] = l;
    if (pair) lam[std::size_t(j)] = l;
  }
  at::Tensor l = at::tensor(std::vector<float>(lam.begin(), lam.end()), at::kFloat).unsqueeze(1);
  batch.targets = y1 * l + y1.flip(0) * (1.0 - l);
  return lam;
}

void Mixup::operator()(Batch& batch, const BatchContext& context, Rng& rng) const {
  const at::Tensor& x = batch.inputs;
  apply(batch, draw(x.size(0), x.size(-2), x.size(-1), rng), context.num_classes);
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
        .add("label_smoothing", Type::Float, yaml("0.1"), "the targets' smoothing (timm's default 0.1)").range(0, 1)
        .add("mode", Type::String, YAML::Node("batch"),
             "batch (one lambda per batch) | pair (one per pair i, B-1-i) | elem (one per example, mixed with "
             "example B-1-i)")
        .choices({"batch", "pair", "elem"})
        .add("cutmix_minmax", Type::FloatList, YAML::Node(),
             "[min, max]: CutMix boxes with sides drawn as these fractions of the image's (lambda from the box); "
             "null = a box from lambda")
        .range(0, 1)
        .nullable(),
    [](const Config& c) {
      MixupOptions o;
      o.mixup_alpha = c.get<double>("mixup_alpha");
      o.cutmix_alpha = c.get<double>("cutmix_alpha");
      o.prob = c.get<double>("prob");
      o.switch_prob = c.get<double>("switch_prob");
      o.correct_lam = c.get<bool>("correct_lam");
      o.label_smoothing = c.get<double>("label_smoothing");
      o.mode = c.get<std::string>("mode");
      if (!c.is_null("cutmix_minmax")) {
        auto mm = c.get<std::vector<double>>("cutmix_minmax");
        if (mm.size() != 2 || !(mm[0] < mm[1]))
          throw std::invalid_argument("cutmix_minmax: expected [min, max] with min < max");
        o.cutmix_minmax = std::make_pair(mm[0], mm[1]);
      }
      if (o.mixup_alpha <= 0 && o.cutmix_alpha <= 0)
        throw std::invalid_argument("mixup_alpha and cutmix_alpha are both 0: one must be > 0");
      return std::make_shared<Mixup>(o);
    });

}  // namespace trainrun
