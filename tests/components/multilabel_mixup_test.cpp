// Mixup on a multi-label batch: multi-hot target rows are mixed as the images are, row i becoming
// lam * y_i + (1 - lam) * y_j (the rows as they are: timm smooths class indices only).
#include "components/data/batch_transform.h"

#include "make_dataset.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

TEST(MultilabelMixup, MultiHotRowsAreMixedAsTheImagesAre) {
  const auto& entry = Registry<BatchTransform>::instance().get("mixup");
  auto mixup = entry.make(Config(
      test::with_defaults(entry.schema,
                          YAML::Load("{mixup_alpha: 1.0, cutmix_alpha: 0.0, prob: 1.0, mode: batch, label_smoothing: 0.0}")),
      "data.mixup"));
  torch::manual_seed(4);
  const at::Tensor images = torch::rand({4, 3, 8, 8});
  const at::Tensor hot = torch::tensor({{1.f, 0.f, 1.f, 0.f, 0.f}, {0.f, 1.f, 0.f, 0.f, 0.f},
                                        {0.f, 0.f, 1.f, 1.f, 1.f}, {1.f, 1.f, 0.f, 0.f, 0.f}});
  Batch batch{images.clone(), hot.clone()};
  Rng rng(7);
  (*mixup)(batch, BatchContext{5, 0, 0}, rng);
  // The image batch's lambda, read back from row 0: lam * x0 + (1 - lam) * x3.
  const at::Tensor x0 = images[0].flatten(), x3 = images[3].flatten();
  const double lam = ((batch.inputs[0].flatten() - x3).dot(x0 - x3) / (x0 - x3).dot(x0 - x3)).item<double>();
  ASSERT_GT(lam, 0.0);
  ASSERT_LT(lam, 1.0);
  EXPECT_TRUE(torch::allclose(batch.targets, hot * lam + hot.flip({0}) * (1 - lam), 1e-5, 1e-6)) << batch.targets;
  EXPECT_EQ(batch.targets.sizes(), hot.sizes());
}

}  // namespace
}  // namespace trainrun
