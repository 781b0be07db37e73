// `trainrun sweep`'s reading of Hydra's multirun overrides and its combinations: the grid in
// itertools.product's order (as Hydra's BasicSweeper), a comma inside brackets kept in its value,
// --random N drawn without repetition and the same for the same seed.
#include "runner/recipe/sweep_plan.h"

#include "support/errors.h"
#include "test_util.h"

#include <set>

namespace trainrun {
namespace {

TEST(SweepPlan, ValuesSplitAtTopLevelCommasOnly) {
  EXPECT_EQ(split_sweep_values("k", "1e-3,1e-2"), (std::vector<std::string>{"1e-3", "1e-2"}));
  EXPECT_EQ(split_sweep_values("k", "[1,2],[3,4]"), (std::vector<std::string>{"[1,2]", "[3,4]"}));
  EXPECT_EQ(split_sweep_values("k", "[1,2]"), (std::vector<std::string>{"[1,2]"}));
  EXPECT_EQ(split_sweep_values("k", "{a: 1, b: 2},'x,y'"), (std::vector<std::string>{"{a: 1, b: 2}", "'x,y'"}));
  EXPECT_THROW(split_sweep_values("k", "1,,2"), RecipeError);
  EXPECT_THROW(split_sweep_values("k", "[1,2"), RecipeError);
}

TEST(SweepPlan, GridIsItertoolsProductInTheOrderGiven) {
  const SweepPlan plan = parse_sweep({"train.epochs=2", "optimizer.lr=0.1,0.01", "data.batch_size=32,64,128"});
  EXPECT_EQ(plan.fixed, std::vector<std::string>{"train.epochs=2"});
  const auto runs = grid_runs(plan);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0].overrides(), (std::vector<std::string>{"optimizer.lr=0.1", "data.batch_size=32"}));
  EXPECT_EQ(runs[1].overrides(), (std::vector<std::string>{"optimizer.lr=0.1", "data.batch_size=64"}));
  EXPECT_EQ(runs[5].overrides(), (std::vector<std::string>{"optimizer.lr=0.01", "data.batch_size=128"}));
  EXPECT_EQ(runs[5].folder, "005-optimizer.lr=0.01,data.batch_size=128");
  EXPECT_EQ(grid_runs(parse_sweep({"data.dataset.root=/a/b,/c"}))[0].folder, "000-data.dataset.root=_a_b");
}

TEST(SweepPlan, RandomDrawsDistinctCombinationsTheSameForASeed) {
  const SweepPlan plan = parse_sweep({"a=1,2,3,4", "b=x,y,z"});
  const auto runs = random_runs(plan, 5, 7);
  ASSERT_EQ(runs.size(), 5u);
  std::set<std::vector<std::string>> seen;
  for (const auto& r : runs) seen.insert(r.overrides());
  EXPECT_EQ(seen.size(), 5u);
  const auto again = random_runs(plan, 5, 7);
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].folder, again[i].folder);
  EXPECT_NE(random_runs(plan, 12, 7)[0].folder + random_runs(plan, 12, 7)[1].folder,
            random_runs(plan, 12, 8)[0].folder + random_runs(plan, 12, 8)[1].folder);
  EXPECT_THROW(random_runs(plan, 13, 7), RecipeError);
}

TEST(SweepPlan, RefusesWhatCannotBeSwept) {
  EXPECT_THROW(parse_sweep({"output.dir=a,b"}), RecipeError);
  EXPECT_THROW(parse_sweep({"a=1,2", "a=3,4"}), RecipeError);
  EXPECT_THROW(parse_sweep({"--lr"}), RecipeError);
}

}  // namespace
}  // namespace trainrun
