// Every number a recipe can hold has its valid range declared once, in its schema (issue 17):
// the recipe check enforces it and `describe` prints it.
#include "registry/registry.h"
#include "runner/recipe/recipe.h"

#include "test_util.h"

namespace trainrun {
namespace {

bool numeric(Type t) { return t == Type::Int || t == Type::Float || t == Type::IntList || t == Type::FloatList; }

TEST(SchemaBounds, EveryNumericKeyDeclaresItsRange) {
  std::vector<std::pair<std::string, const Schema*>> schemas;
  for (auto& [kind, view] : kinds())
    for (auto* e : view->entries()) schemas.emplace_back(kind + "/" + e->name, &e->schema);
  std::vector<std::string> sections = section_names();
  sections.push_back("");
  sections.push_back("freeze[]");
  for (auto& s : sections) schemas.emplace_back("recipe/" + (s.empty() ? "(top level)" : s), &section_schema(s));
  ASSERT_GT(schemas.size(), 20u);
  int numbers = 0;
  for (auto& [where, schema] : schemas)
    for (auto& p : schema->params())
      // Any finite value: normalize's mean, random_erasing's fill (in normalized units).
      if (numeric(p.type) && !(where == "transforms/normalize" && p.name == "mean") &&
          !(where == "transforms/random_erasing" && p.name == "value")) {
        ++numbers;
        EXPECT_FALSE(p.range_text().empty()) << where << ": " << p.name << " has no declared range";
      }
  EXPECT_GT(numbers, 40);
}

TEST(SchemaBounds, RangesAreEnforcedAndDescribed) {
  const std::string recipe = test::source("recipes/pets_resnet50d.yaml");
  auto r = test::run(test::trainrun("check " + recipe + " model.drop_path_rate=1.0"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("model.drop_path_rate: must be < 1, got 1.0"), std::string::npos) << r.err;
  r = test::run(test::trainrun("describe models/resnet50d"));
  EXPECT_NE(r.out.find("drop_path_rate  (float, default 0.0, [0, 1))"), std::string::npos) << r.out;
  r = test::run(test::trainrun("describe recipe/data"));
  EXPECT_NE(r.out.find("batch_size  (int, default "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", >= 1)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainrun
