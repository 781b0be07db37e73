#include "registry/schema.h"

#include <gtest/gtest.h>

namespace trainrun {
namespace {

TEST(Closest, SuggestsNearKeys) {
  EXPECT_EQ(closest("lrr", {"lr", "weight_decay", "momentum"}), "lr");
  EXPECT_EQ(closest("optimzer", {"model", "optimizer", "data"}), "optimizer");
  EXPECT_EQ(closest("zzzzzz", {"lr", "momentum"}), "");
}

// A bare key finds its section: dotted candidates compared by their last part, the closest (then
// the first) winning, the whole path returned.
TEST(Closest, ByLastPartFindsTheSection) {
  const std::vector<std::string> keys = {"data.batch_size", "train.epochs", "output.dir", "optimizer.lr"};
  EXPECT_EQ(closest("epochs", keys, /*by_last_part=*/true), "train.epochs");
  EXPECT_EQ(closest("epoch", keys, /*by_last_part=*/true), "train.epochs");
  EXPECT_EQ(closest("lr", keys, /*by_last_part=*/true), "optimizer.lr");
  EXPECT_EQ(closest("epochs", keys), "");  // compared whole, `train.epochs` is too far
  EXPECT_EQ(did_you_mean("batch_size", keys, /*by_last_part=*/true), " (did you mean 'data.batch_size'?)");
}

}  // namespace
}  // namespace trainrun
