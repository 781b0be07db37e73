// `trainrun predict` given folders and patterns, and its --output file: a folder is its images,
// recursively, in timm's inference.py order (natural_key over the lower-cased path); a quoted
// pattern is expanded as the shell would; --output writes the top-k of every image in the
// columns of timm's inference.py results (CSV with --results-separate-col, JSON lines as its
// json-records), the same classes and scores as the lines on stdout.
#include "components/data/image.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::vector<std::string> files_of(const std::vector<json>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) out.push_back(l["file"].get<std::string>());
  return out;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    rows.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) rows.back().push_back(cell);
  }
  return rows;
}

class Predict : public ::testing::Test {
 protected:
  // basicnet trained on 64 Fashion-MNIST examples and exported; photos/ holds five images in
  // folders (and a text file predict leaves alone).
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    recipe = test::source("recipes/quickstart.yaml") + " data.max_train_samples=64 train.eval_every=never world.nproc_per_node=1 output.dir=" +
             (dir / "run");
    auto train = test::run(test::trainrun(recipe));
    ASSERT_EQ(train.code, 0) << train.err;
    auto exported = test::run(test::trainrun("export " + recipe + " --checkpoint " + (dir / "run") + " --format torchscript"));
    ASSERT_EQ(exported.code, 0) << exported.err;
    model = " --model " + (dir / "run/model.pt");
    int shade = 0;
    for (const std::string name : {"photos/b/img10.png", "photos/D.png", "photos/A/x.png", "photos/b/img2.png", "photos/c.png"}) {
      fs::create_directories(fs::path(dir / name).parent_path());
      write_image(dir / name, torch::full({28, 28, 1}, 30 + 40 * shade++, torch::kUInt8));
    }
    test::write_file(dir / "photos/notes.txt", "not an image, and not named like one");
  }

  test::TempDir dir;
  std::string recipe, model;
};

// A folder: every image under it, in timm's order, each line what the file alone gives; the
// recipe form reads the folder the same way.
TEST_F(Predict, FolderIsItsImagesInTimmsOrder) {
  auto r = test::run(test::trainrun("predict" + model + " " + (dir / "photos")));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  const std::vector<std::string> order = {dir / "photos/A/x.png", dir / "photos/b/img2.png", dir / "photos/b/img10.png",
                                          dir / "photos/c.png", dir / "photos/D.png"};
  EXPECT_EQ(files_of(lines), order);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto alone = test::run(test::trainrun("predict" + model + " " + order[i]));
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(json::parse(alone.out), lines[i]) << order[i];
  }
  auto with_recipe = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "run") + " " + (dir / "photos")));
  ASSERT_EQ(with_recipe.code, 0) << with_recipe.err;
  EXPECT_EQ(files_of(json_lines(with_recipe.out)), order);
}

// A quoted pattern is expanded as the shell would expand it unquoted (sorted as glob(3) sorts).
TEST_F(Predict, PatternIsTheFilesItMatches) {
  auto r = test::run(test::trainrun("predict" + model + " '" + (dir / "photos/b/*.png") + "' " + (dir / "photos/c.png")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(files_of(json_lines(r.out)),
            (std::vector<std::string>{dir / "photos/b/img10.png", dir / "photos/b/img2.png", dir / "photos/c.png"}));
}

// --output FILE.csv / FILE.jsonl: timm's inference.py columns, filename (the path as found),
// index, label and prob for each of the top k; the values are those of the stdout lines.
TEST_F(Predict, OutputFileHasTimmsColumns) {
  auto r = test::run(test::trainrun("predict" + model + " --top-k 3 --output " + (dir / "top3.csv") + " " + (dir / "photos")));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 5u);
  const auto rows = csv_rows(test::read_file(dir / "top3.csv"));
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"filename", "index_0", "index_1", "index_2", "label_0", "label_1", "label_2",
                                               "prob_0", "prob_1", "prob_2"}));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& row = rows[i + 1];
    ASSERT_EQ(row.size(), 10u);
    EXPECT_EQ(row[0], lines[i]["file"]);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(row[1 + k], std::to_string(lines[i]["topk"][k]["index"].get<int64_t>()));
      EXPECT_EQ(row[4 + k], lines[i]["topk"][k]["label"].get<std::string>());
      EXPECT_NEAR(std::stod(row[7 + k]), lines[i]["topk"][k]["score"].get<double>(), 1e-6);
    }
  }

  r = test::run(test::trainrun("predict" + model + " --top-k 3 --output " + (dir / "top3.jsonl") + " " + (dir / "photos")));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto records = json_lines(test::read_file(dir / "top3.jsonl"));
  ASSERT_EQ(records.size(), 5u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].size(), 4u) << records[i];
    EXPECT_EQ(records[i]["filename"], lines[i]["file"]);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(records[i]["index"][k], lines[i]["topk"][k]["index"]);
      EXPECT_EQ(records[i]["label"][k], lines[i]["topk"][k]["label"]);
      EXPECT_NEAR(records[i]["prob"][k].get<double>(), lines[i]["topk"][k]["score"].get<double>(), 1e-6);
    }
  }

  // Top 1: one column each, as inference.py writes a single result.
  r = test::run(test::trainrun("predict" + model + " --top-k 1 --output " + (dir / "top1.csv") + " " + (dir / "photos/c.png")));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto top1 = csv_rows(test::read_file(dir / "top1.csv"));
  ASSERT_EQ(top1.size(), 2u);
  EXPECT_EQ(top1[0], (std::vector<std::string>{"filename", "index", "label", "prob"}));
  EXPECT_EQ(top1[1][2], json::parse(r.out)["label"]);

  r = test::run(test::trainrun("predict" + model + " --output " + (dir / "out.txt") + " " + (dir / "photos")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "predict: --output " + (dir / "out.txt") + ": expected a .csv or .jsonl file\n");
  EXPECT_FALSE(fs::exists(dir / "out.txt"));
}

}  // namespace
}  // namespace trainrun
