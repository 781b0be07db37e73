// WithoutWeightInit (components/models/model.h): what `list models` and `describe` build under.
// The model has every parameter and buffer of a normal build, its family's init is left out
// (so the values differ from a normal build on the same seed), and the guard ends with its scope,
// nested ones too. TimmModelsCli checks the counts and configs those commands print.
#include "components/models/model.h"
#include "runner/io/weights.h"

#include "make_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace trainrun {
namespace {

// The state_dict of `name` built after torch.manual_seed(0).
TensorList seeded(const std::string& name) {
  torch::manual_seed(0);
  return state_dict(*test::make_model(name));
}

bool same_values(const TensorList& a, const TensorList& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !a[i].second.equal(b[i].second)) return false;
  return true;
}

// The smallest of each family (the larger variants run the same init_weights).
class Families : public ::testing::TestWithParam<std::string> {};

TEST_P(Families, SameTensorsAsANormalBuildWithoutTheFamilysInit) {
  const TensorList normal = seeded(GetParam());
  TensorList skipped;
  {
    WithoutWeightInit outer;
    {
      WithoutWeightInit inner;
    }
    EXPECT_TRUE(weight_init_skipped());  // the inner guard's end restores the outer one's
    skipped = seeded(GetParam());
  }
  EXPECT_FALSE(weight_init_skipped());
  ASSERT_EQ(skipped.size(), normal.size());
  for (std::size_t i = 0; i < normal.size(); ++i) {
    EXPECT_EQ(skipped[i].first, normal[i].first);
    EXPECT_EQ(skipped[i].second.sizes(), normal[i].second.sizes()) << normal[i].first;
    EXPECT_EQ(skipped[i].second.scalar_type(), normal[i].second.scalar_type()) << normal[i].first;
  }
  EXPECT_FALSE(same_values(skipped, normal)) << GetParam() << ": its family's init ran under the guard";
  EXPECT_TRUE(same_values(seeded(GetParam()), normal)) << "the guard's end did not restore the init";
}

INSTANTIATE_TEST_SUITE_P(WithoutWeightInit, Families,
                         ::testing::Values("resnet18", "convnext_tiny", "vit_tiny_patch16_224", "efficientnet_b0"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trainrun
