// The registry: self-registration, schemas as the one source for validation and describe.
#include "components/models/model.h"
#include "components/optim/optim.h"
#include "registry/registry.h"

#include "test_util.h"

namespace trainrun {
namespace {

// A component registered from outside the tree, the way a user adds one.
class Smoothed : public Loss {
 public:
  at::Tensor operator()(const at::Tensor& o, const at::Tensor&, bool) const override { return o.sum(); }
};
TRAINRUN_REGISTER(Loss, "test_only_loss", "a loss registered by the tests",
                  Schema().add("weight", Type::Float, yaml("0.5"), "how much").range(0, 1),
                  [](const Config&) { return std::make_shared<Smoothed>(); });

TEST(Registry, EveryKindIsListedWithoutTheRunnerNamingThem) {
  auto& all = kinds();
  for (const char* kind : {"models", "datasets", "optimizers", "schedulers", "transforms", "losses"})
    EXPECT_TRUE(all.count(kind)) << kind;
  auto losses = all.at("losses")->names();
  EXPECT_NE(std::find(losses.begin(), losses.end(), "test_only_loss"), losses.end());
  auto optims = all.at("optimizers")->names();
  EXPECT_EQ(optims, (std::vector<std::string>{"adam", "adamw", "lamb", "lion", "nadam", "radam", "rmsprop", "sgd"}));
}

TEST(Registry, DuplicateNamesAreRejected) {
  EXPECT_THROW(Registry<Loss>::instance().add("nll", "again", Schema(), nullptr), std::logic_error);
}

TEST(Registry, SchemaChecksValues) {
  const Schema& s = Registry<Loss>::instance().get("test_only_loss").schema;
  const Param* w = s.find("weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->check(YAML::Load("0.25")), "");
  EXPECT_EQ(w->check(YAML::Load("2")), "must be <= 1, got 2");
  EXPECT_EQ(w->check(YAML::Load("[1]")), "expected a number, got [1]");
  EXPECT_EQ(w->default_text(), "0.5");
}

TEST(Describe, PrintsEveryParameterWithTypeDefaultAndDoc) {
  auto r = test::run(test::trainrun("describe optimizers/sgd"));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* needle : {"optimizers/sgd:", "lr  (float, default 0.01, > 0)", "momentum  (float, default 0.0, >= 0)",
                             "nesterov  (bool, default false)", "Nesterov momentum"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  r = test::run(test::trainrun("describe models/basicnt"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "describe: no models/basicnt (did you mean 'basicnet'?)\n");
  r = test::run(test::trainrun("describe recipe/train"));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("eval_every  (int | epoch | never, default epoch, >= 1)"), std::string::npos) << r.out;
}

TEST(List, ShowsEachKind) {
  auto r = test::run(test::trainrun("list"));
  ASSERT_EQ(r.code, 0);
  for (const char* needle : {"models:", "basicnet", "datasets:", "mnist", "optimizers:", "adamw", "schedulers:",
                             "constant", "transforms:", "normalize", "losses:", "cross_entropy"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle;
  r = test::run(test::trainrun("list model"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'models'?"), std::string::npos);
}

}  // namespace
}  // namespace trainrun
