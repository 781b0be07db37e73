// The plain-PyTorch rebuilds of timm models that bench/compare's Python sides train
// (tests/py/timm_resnet.py, timm_convnext.py, timm_vit.py, timm_efficientnet.py) against the real
// timm's numbers (tests/data/timm/NAME.json, made by tests/py/timm_ref.py): state_dict keys in
// timm's order, shapes, dtypes, the seeded initial weights, and the eval logits of the formula
// weights within 1e-4. tests/py/timm_plain_check.py does the comparing; a benchmark against a
// model that is not timm's would not be a comparison with the same architecture.
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace trainrun {
namespace {

class TimmPlainPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmPlainPyTorch, KeysSeededInitAndLogitsAreTimms) {
  const std::string json = test::source("tests/data/timm/" + GetParam() + ".json");
  ASSERT_TRUE(std::filesystem::exists(json)) << json << ": made by tests/py/timm_ref.py with the model";
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/timm_plain_check.py") + " " + json);
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("seeded init are timm's"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max logit diff"), std::string::npos) << r.out;
}

// The models bench/compare's Python sides train (bench/py/pets_*.py); resnet18's file is timm's
// resnet18.tv_in1k with zero_init_last=False, which the check passes on as timm_ref.py recorded.
INSTANTIATE_TEST_SUITE_P(Bench, TimmPlainPyTorch,
                         ::testing::Values("resnet18", "resnet50d", "convnext_tiny", "vit_small_patch16_224",
                                           "efficientnet_b0"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trainrun
