// `trainrun export --format hub` (runner/export/hub_folder.h): a finished run's model as the files
// of a Hugging Face Hub model repository, read back by Python: config.json in timm's format, the
// model card's front matter by python3-yaml and its figures equal to metrics.jsonl's, the curves
// by PIL, the weights byte-identical; a folder that is not empty is refused before anything.
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(HubExport, AFinishedRunIsARepositoryPythonReads) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const std::string recipe = test::source("recipes/quickstart.yaml") +
                             " data.max_train_samples=512 data.max_eval_samples=200 train.log_every_steps=2 "
                             "train.epochs=2 data.workers=1 world.nproc_per_node=1 output.dir=" + (dir / "run");
  auto r = test::run(test::trainrun(recipe));
  ASSERT_EQ(r.code, 0) << r.err;
  auto hub = test::run(test::trainrun("export " + (dir / "run/recipe.resolved.yaml") + " --checkpoint " + (dir / "run") +
                                      " --format hub --repo me/fashion-basicnet --license mit"));
  ASSERT_EQ(hub.code, 0) << hub.err;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "run/hub")) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"README.md", "config.json", "labels.json", "model.safetensors", "recipe.yaml",
                                             "training_curves.png"}));
  EXPECT_EQ(test::read_file(dir / "run/hub/model.safetensors"), test::read_file(dir / "run/model.safetensors"));
  EXPECT_EQ(test::read_file(dir / "run/hub/recipe.yaml"), test::read_file(dir / "run/recipe.resolved.yaml"));

  const json config = json::parse(test::read_file(dir / "run/hub/config.json"));
  EXPECT_EQ(config["architecture"], "basicnet");
  EXPECT_EQ(config["num_classes"], 10);
  EXPECT_EQ(config["num_features"], 128);  // fc2's inputs
  EXPECT_EQ(config["label_names"][9], "Ankle boot");
  EXPECT_EQ(config["pretrained_cfg"]["input_size"], json::parse("[1, 28, 28]"));
  EXPECT_EQ(config["pretrained_cfg"]["mean"], json::parse("[0.1307]"));
  EXPECT_EQ(config["pretrained_cfg"]["classifier"], "fc2");
  EXPECT_EQ(config["trainrun"]["task"], "single_label");

  // The card: its front matter as YAML, its figures those of the last evaluation in metrics.jsonl.
  auto py = test::run(std::string(test::kPython) +
                      " -c \"import json, sys, yaml; from PIL import Image; t = open(sys.argv[1]).read(); "
                      "assert t.startswith('---\\n'); meta = yaml.safe_load(t.split('---\\n')[1]); "
                      "print(json.dumps({'meta': meta, 'png': list(Image.open(sys.argv[2]).size)}))\" " +
                      (dir / "run/hub/README.md") + " " + (dir / "run/hub/training_curves.png"));
  ASSERT_EQ(py.code, 0) << py.err;
  const json read = json::parse(py.out);
  EXPECT_EQ(read["meta"]["library_name"], "trainrun");  // basicnet is not a timm architecture
  EXPECT_EQ(read["meta"]["license"], "mit");
  EXPECT_EQ(read["meta"]["metrics"], json::parse(R"(["accuracy", "top5"])"));
  EXPECT_EQ(read["meta"]["pipeline_tag"], "image-classification");
  EXPECT_EQ(read["png"], json::parse("[800, 450]"));
  json last;
  for (const auto& line : test::read_jsonl(dir / "run/metrics.jsonl"))
    if (line.contains("eval_loss")) last = line;
  const std::string card = test::read_file(dir / "run/hub/README.md");
  char row[64];
  std::snprintf(row, sizeof row, "| `eval_accuracy` | %.4f |", last["eval_accuracy"].get<double>());
  EXPECT_NE(card.find(row), std::string::npos) << card;
  EXPECT_NE(card.find("at step " + std::to_string(last["step"].get<int64_t>())), std::string::npos) << card;
  EXPECT_NE(card.find("![Training and evaluation loss by step](training_curves.png)"), std::string::npos);

  // Not into a folder that holds something: exit 2, the folder as it was.
  auto again = test::run(test::trainrun("export " + (dir / "run/recipe.resolved.yaml") + " --checkpoint " + (dir / "run") +
                                        " --format hub"));
  EXPECT_EQ(again.code, 2) << again.err;
  EXPECT_NE(again.err.find("is not an empty folder (nothing written)"), std::string::npos) << again.err;
  EXPECT_EQ(json::parse(test::read_file(dir / "run/hub/config.json")), config);
}

}  // namespace
}  // namespace trainrun
