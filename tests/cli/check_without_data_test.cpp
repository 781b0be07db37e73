// `trainrun check` of a recipe whose dataset is not downloaded yet (issue 43, item 2): it reports
// what does not need the data (the model with a one-class head while num_classes is auto, the
// parameter groups, optimizer, transforms, world; the schedule with --steps-per-epoch) and then
// what waits for it. Checked against the same recipe with the data present: the parameter count
// is the one-class count plus the per-class head once per class, the groups and the schedule
// are the same lines.
#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>

#include <algorithm>
#include <regex>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

class CheckWithoutData : public ::testing::Test {
 protected:
  // The shipped pets recipe, offline: no Hub weights, 2-image batches, the root given.
  std::string check(const std::string& root, const std::string& more = "") const {
    return test::trainrun("check " + test::source("recipes/pets_resnet50d.yaml") + " model.pretrained=false data.batch_size=2 "
                          "optimizer.layer_decay=0.75 'freeze=[]' world.nproc_per_node=1 data.dataset.root=" + root + " " + more);
  }
  // 4 photos each of two breeds: val_fraction 0.2 leaves 6 to train, 3 steps an epoch.
  void write_pets(const std::string& root) const {
    fs::create_directories(root);
    for (int i = 1; i <= 4; ++i)
      for (const char* breed : {"Abyssinian", "Bengal"})
        write_image(root + "/" + breed + "_" + std::to_string(i) + ".jpg", torch::full({12, 16, 3}, 40 * i, torch::kUInt8));
  }
  test::TempDir dir;
};

TEST_F(CheckWithoutData, ReportsModelGroupsAndOptimizerThenWhatNeedsTheData) {
  auto without = test::run(check(dir / "absent/images"));
  ASSERT_EQ(without.code, 0) << without.err;
  const std::string& out = without.out;
  EXPECT_NE(out.find("note: data.dataset: Oxford-IIIT Pet images.tar.gz would be downloaded from "), std::string::npos) << out;
  EXPECT_NE(out.find("\n  num_classes: auto\n"), std::string::npos) << out;  // the resolved recipe keeps auto
  EXPECT_NE(out.find("data: pets_folder, not downloaded yet: a run fetches it first (or `trainrun check --download`)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("optimizer: adam, 18 parameter groups"), std::string::npos) << out;
  EXPECT_NE(out.find("\nneeds the data: the classes (num_classes), the splits and their class counts, steps per epoch and "
                     "the schedule (or --steps-per-epoch N), one example through each pipeline\n"),
            std::string::npos) << out;
  const auto model_line = lines_starting(out, "model: resnet50d, ");
  ASSERT_EQ(model_line.size(), 1u) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(model_line[0], m, std::regex(R"(^model: resnet50d, ([\d,]+) parameters, ([\d,]+) trainable, )"
                                                             R"(with a one-class head \(num_classes: auto: the data names the )"
                                                             R"(classes; each class adds ([\d,]+) parameters to fc\.\*\)$)")))
      << model_line[0];
  auto number = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    return std::stoll(s);
  };
  const int64_t one_class = number(m[1]), per_class = number(m[3]);
  EXPECT_EQ(per_class, 2049);  // fc: 2048 inputs + the bias, per class

  // With the data: two classes, the same model plus one more class's head, the same groups but
  // the head's.
  write_pets(dir / "pets/images");
  auto with = test::run(check(dir / "pets/images"));
  ASSERT_EQ(with.code, 0) << with.err;
  EXPECT_NE(with.out.find("data: pets_folder, 2 classes, 6 train / 2 validation examples"), std::string::npos) << with.out;
  EXPECT_NE(with.out.find("model: resnet50d, " + thousands(one_class + per_class) + " parameters"), std::string::npos)
      << with.out;
  auto groups = [](const std::string& text) {
    std::vector<std::string> g;  // the table's rows (the recipe's "  layer_decay: 0.75" is not one)
    for (const auto& line : lines_starting(text, "  layer_"))
      if (std::regex_search(line, std::regex(R"(^  layer_\d+_)"))) g.push_back(line);
    if (!g.empty()) g.pop_back();  // layer_17: the head, one class against two
    return g;
  };
  EXPECT_EQ(groups(out).size(), 17u) << out;
  EXPECT_EQ(groups(out), groups(with.out));
}

TEST_F(CheckWithoutData, TheScheduleTakesTheRunsLengthFromStepsPerEpoch) {
  auto refused = test::run(check(dir / "absent/images", "--schedule"));
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("check --schedule: the run's length needs the data ("), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("give --steps-per-epoch N"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");

  auto given = test::run(check(dir / "absent/images", "--schedule --steps-per-epoch 3"));
  ASSERT_EQ(given.code, 0) << given.err;
  write_pets(dir / "pets/images");
  auto from_data = test::run(check(dir / "pets/images", "--schedule"));
  ASSERT_EQ(from_data.code, 0) << from_data.err;
  EXPECT_EQ(test::count_lines(from_data.out), 1 + 16) << from_data.out;  // the header, steps 0..15 (5 epochs x 3)
  EXPECT_EQ(given.out, from_data.out);

  auto report = test::run(check(dir / "absent/images", "--steps-per-epoch 3"));
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_NE(report.out.find("\nsteps per epoch: 3 (given), total 15 optimizer steps\n"), std::string::npos) << report.out;
  EXPECT_EQ(test::run(check(dir / "absent/images", "--steps-per-epoch 0")).code, 2);
}

// The README's headline recipe where its photos are not (yet): `check` reports the model, groups,
// optimizer, transforms and world, then the missing folder with its key and where it was written,
// exit 2 (a run's exit), nothing written. Before, it printed only the last line.
TEST_F(CheckWithoutData, AMissingFolderIsReportedAfterWhatNeedsNoData) {
  const std::string recipe = test::source("docs/recipes/own-images.yaml");
  auto r = test::run("cd '" + dir.path().string() + "' && HF_HOME='" + (dir / "hf") + "' " + test::trainrun("check " + recipe));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "data.dataset.root (" + recipe + ":4:39): data/photos: no such folder\n");
  for (const char* needle : {"model: resnet18, ", "with a one-class head", "data: image_folder, not found (below)",
                             "train transforms:", "  random_resized_crop ", "world: 1 node x ", "optimizer: adamw, ",
                             "needs the data: the classes (num_classes)"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  EXPECT_EQ(r.out.find("data: image_folder, not downloaded"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

}  // namespace
}  // namespace trainrun
