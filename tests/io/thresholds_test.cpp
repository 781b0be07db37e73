// thresholds.json (runner/io/thresholds.h): what eval --tune-thresholds writes is what predict and
// export read back, in the classes' order; thresholds of other weights are not used; a file that
// is not a thresholds file, or lacks a class, is one line naming it.
#include "runner/io/thresholds.h"

#include "components/data/dataset.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

namespace trainrun {
namespace {

TEST(Thresholds, WrittenThenReadInTheClassesOrder) {
  test::TempDir dir;
  const std::string weights = dir / "model.safetensors";
  EXPECT_FALSE(tuned_thresholds(weights, {"cat", "dog"}));  // no file: none
  const std::string file = write_thresholds(weights, "validation", {{"cat", 0.25, 0.8}, {"dog", 0.5, std::nullopt}});
  EXPECT_EQ(file, dir / "thresholds.json");
  const auto j = nlohmann::json::parse(test::read_file(file));
  EXPECT_EQ(j["weights"], "model.safetensors");
  EXPECT_EQ(j["split"], "validation");
  EXPECT_TRUE(j["f1"]["dog"].is_null());
  EXPECT_EQ(*tuned_thresholds(weights, {"dog", "cat"}), (std::vector<double>{0.5, 0.25}));
  // Tuned for model.safetensors: not the EMA weights' thresholds.
  std::string note;
  EXPECT_FALSE(tuned_thresholds(dir / "model_ema.safetensors", {"cat", "dog"}, &note));
  EXPECT_NE(note.find("holds the thresholds of model.safetensors, not of model_ema.safetensors"), std::string::npos) << note;
}

TEST(Thresholds, BrokenFilesAreOneLineNamingThem) {
  test::TempDir dir;
  const std::string weights = dir / "model.safetensors";
  auto refused = [&](const std::string& text, const std::string& message) {
    test::write_file(dir / "thresholds.json", text);
    try {
      tuned_thresholds(weights, {"cat", "dog"});
      ADD_FAILURE() << "accepted: " << text;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dir / "thresholds.json"), std::string::npos) << e.what();
    }
  };
  refused("{", "not a thresholds file");
  refused("[1, 2]", "not a thresholds file: expected {\"weights\"");
  refused(R"({"weights": "model.safetensors", "thresholds": {"cat": 0.3}})", "no threshold for class 'dog'");
  refused(R"({"weights": "model.safetensors", "thresholds": {"cat": 0.3, "dog": "high"}})", "no threshold for class 'dog'");
}

}  // namespace
}  // namespace trainrun
