#include "registry/schema.h"

#include <gtest/gtest.h>

namespace trainrun {
namespace {

TEST(Closest, SuggestsNearKeys) {
  EXPECT_EQ(closest("lrr", {"lr", "weight_decay", "momentum"}), "lr");
  EXPECT_EQ(closest("optimzer", {"model", "optimizer", "data"}), "optimizer");
  EXPECT_EQ(closest("zzzzzz", {"lr", "momentum"}), "");
}

}  // namespace
}  // namespace trainrun
