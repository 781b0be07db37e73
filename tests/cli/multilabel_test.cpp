// recipes/multilabel_resnet18.yaml on the set scripts/tiled-fashion-mnist.py makes (a small one):
// it trains and evaluates with the multi-label metrics, `trainrun eval` prints the per-class
// table, an evaluation on two processes gathers every image once (the same numbers as one),
// thresholds tuned by `eval --tune-thresholds` reach predict and the export, and the mismatches between task, data and loss are one line each before anything starts.
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// The recipe on `pictures` training and 96 evaluation pictures made in `dir`/data.
std::string recipe_on_tiles(const test::TempDir& dir, int pictures) {
  auto made = test::run(std::string(test::kPython) + " " + test::source("scripts/tiled-fashion-mnist.py") + " " +
                        (dir / "data") + " --train " + std::to_string(pictures) + " --eval 96");
  EXPECT_EQ(made.code, 0) << made.err;
  return test::source("recipes/multilabel_resnet18.yaml") + " data.dataset.root=" + (dir / "data") +
         " data.dataset.labels_file=" + (dir / "data/train.csv") + " data.dataset.val_labels_file=" +
         (dir / "data/eval.csv") + " data.workers=1";
}

nlohmann::json last_eval(const std::string& metrics) {
  nlohmann::json last;
  for (const auto& line : test::read_jsonl(metrics))
    if (line.contains("eval_loss")) last = line;
  return last;
}

// `eval --tune-thresholds` on the trained run in `dir`/run: thresholds.json beside the weights,
// a macro F1 at least the one at 0.5, and the thresholds reach a later eval, predict (unless
// --threshold) and the TorchScript export, read back by python3-torch.
void check_tuned_thresholds(const test::TempDir& dir, const std::string& recipe, const std::string& images) {
  const double at_half = nlohmann::json::parse(test::read_file(dir / "run/eval_report.json"))["f1_macro"].get<double>();
  auto tuned = test::run(test::trainrun("eval " + recipe + " --checkpoint " + (dir / "run") + " --tune-thresholds"));
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  EXPECT_NE(tuned.out.find("tuned on this split"), std::string::npos) << tuned.out;
  const auto file = nlohmann::json::parse(test::read_file(dir / "run/thresholds.json"));
  EXPECT_EQ(file["weights"], "model.safetensors");
  ASSERT_EQ(file["thresholds"].size(), 10u);
  const double tuned_f1 = nlohmann::json::parse(test::read_file(dir / "run/eval_report.json"))["f1_macro"].get<double>();
  EXPECT_GE(tuned_f1, at_half);
  std::cout << "[ measured ] f1_macro at 0.5 " << at_half << ", at the tuned thresholds " << tuned_f1 << "\n";
  // A later eval judges at them.
  auto again = test::run(test::trainrun("eval " + recipe + " --checkpoint " + (dir / "run")));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("thresholds: " + (dir / "run/thresholds.json")), std::string::npos) << again.out;
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir / "run/eval_report.json"))["f1_macro"].get<double>(), tuned_f1);
  // predict: each label's own threshold; --threshold replaces them all.
  auto predicted = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "run") + " " + images));
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const auto line = nlohmann::json::parse(predicted.out.substr(0, predicted.out.find('\n')));
  EXPECT_FALSE(line.contains("threshold")) << line.dump();
  for (const auto& l : line["labels"]) {
    EXPECT_EQ(l["threshold"], file["thresholds"][l["label"].get<std::string>()]) << line.dump();
    EXPECT_GT(l["score"].get<double>(), l["threshold"].get<double>());
  }
  auto strict = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "run") + " --threshold 0.999 " + images));
  ASSERT_EQ(strict.code, 0) << strict.err;
  EXPECT_EQ(nlohmann::json::parse(strict.out.substr(0, strict.out.find('\n')))["threshold"], 0.999);
  // The export carries them, in class order, as python3-torch reads its extra files.
  auto exported = test::run(test::trainrun("export " + recipe + " --checkpoint " + (dir / "run") + " --format torchscript"));
  ASSERT_EQ(exported.code, 0) << exported.err;
  auto py = test::run(std::string(test::kPython) +
                      " -c \"import json, sys, torch; f = {'trainrun.json': ''}; torch.jit.load(sys.argv[1], _extra_files=f); "
                      "print(json.dumps(json.loads(f['trainrun.json'])['thresholds']))\" " + (dir / "run/model.pt"));
  ASSERT_EQ(py.code, 0) << py.err;
  const auto carried = nlohmann::json::parse(py.out);
  const auto labels = nlohmann::json::parse(test::read_file(dir / "run/labels.json"));
  ASSERT_EQ(carried.size(), 10u);
  for (std::size_t c = 0; c < 10; ++c)
    EXPECT_EQ(carried[c], file["thresholds"][labels[std::to_string(c)].get<std::string>()]) << "class " << c;
  // The ONNX export too, as the onnx package reads its metadata_props.
  auto onnx = test::run(test::trainrun("export " + recipe + " --checkpoint " + (dir / "run") + " --format onnx"));
  ASSERT_EQ(onnx.code, 0) << onnx.err;
  auto declared = test::run(std::string(test::kPython) + " " + test::source("tests/py/onnx_check.py") + " " + (dir / "run/model.onnx"));
  ASSERT_EQ(declared.code, 0) << declared.err;
  const auto onnx_info = nlohmann::json::parse(declared.out);
  EXPECT_EQ(onnx_info["checker"], "ok") << declared.out;
  const auto onnx_meta = nlohmann::json::parse(onnx_info["metadata"]["trainrun"].get<std::string>());
  EXPECT_EQ(onnx_meta["activation"], "sigmoid");
  EXPECT_EQ(onnx_meta["thresholds"], carried);
  auto alone = test::run(test::trainrun("predict --model " + (dir / "run/model.pt") + " " + images));
  ASSERT_EQ(alone.code, 0) << alone.err;
  const auto from_export = nlohmann::json::parse(alone.out.substr(0, alone.out.find('\n')))["labels"];
  ASSERT_EQ(from_export.size(), line["labels"].size()) << alone.out;
  for (std::size_t k = 0; k < from_export.size(); ++k) {
    EXPECT_EQ(from_export[k]["label"], line["labels"][k]["label"]);
    EXPECT_EQ(from_export[k]["threshold"], line["labels"][k]["threshold"]);
  }
}

TEST(Multilabel, RecipeTrainsOnTiledFashionMnistAndEvalPrintsTheTable) {
  test::TempDir dir;
  const std::string recipe = recipe_on_tiles(dir, 640);
  auto r = test::run(test::trainrun(recipe + " train.epochs=1 output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json e = last_eval(dir / "run/metrics.jsonl");
  for (const char* key : {"eval_map", "eval_f1_macro", "eval_f1_samples", "eval_accuracy", "eval_loss"})
    EXPECT_TRUE(e.contains(key)) << key << " in " << e.dump();
  EXPECT_FALSE(e.contains("eval_top5"));
  EXPECT_EQ(e["eval_examples"], 96);
  // A picture holds two of ten classes: scores that knew nothing would give an AP of about 0.19
  // per class. One epoch of 640 pictures learns the articles well past that.
  const double map = e["eval_map"].get<double>();
  EXPECT_GT(map, 0.5) << e.dump();
  std::cout << "[ measured ] multilabel_resnet18, 640 tiled pictures, 1 epoch: eval_map " << map << ", eval_f1_samples "
            << e["eval_f1_samples"] << "\n";

  // `trainrun eval` on one and on two processes: the same model, every image once.
  auto one = test::run(test::trainrun("eval " + recipe + " --checkpoint " + (dir / "run")));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("Ankle boot"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("AP precision"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("f1 (samples)"), std::string::npos) << one.out;
  const auto report = nlohmann::json::parse(test::read_file(dir / "run/eval_report.json"));
  EXPECT_NEAR(report["eval_map"].get<double>(), map, 1e-6);
  EXPECT_EQ(report["classes"].size(), 10u);

  // predict: every class whose sigmoid passes train.threshold; the TorchScript export says so too.
  const std::string images = (dir / "data/images/eval_00000.png") + " " + (dir / "data/images/eval_00001.png");
  auto predicted = test::run(test::trainrun("predict " + recipe + " --checkpoint " + (dir / "run") + " " + images));
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  auto exported = test::run(test::trainrun("export " + recipe + " --checkpoint " + (dir / "run") + " --format torchscript"));
  ASSERT_EQ(exported.code, 0) << exported.err;
  auto alone = test::run(test::trainrun("predict --model " + (dir / "run/model.pt") + " " + images));
  ASSERT_EQ(alone.code, 0) << alone.err;
  std::istringstream recipe_lines(predicted.out), export_lines(alone.out);
  int seen = 0;
  for (std::string a, b; std::getline(recipe_lines, a) && std::getline(export_lines, b); ++seen) {
    const auto x = nlohmann::json::parse(a), y = nlohmann::json::parse(b);
    ASSERT_TRUE(x.contains("labels")) << a;
    EXPECT_FALSE(x.contains("label")) << a;
    EXPECT_EQ(x["threshold"], 0.5);
    for (const auto& l : x["labels"]) {
      EXPECT_GT(l["score"].get<double>(), 0.5) << a;
      // The score is the sigmoid of the class's logit.
      const double logit = x["logits"][l["index"].get<std::size_t>()].get<double>();
      EXPECT_NEAR(l["score"].get<double>(), 1.0 / (1.0 + std::exp(-logit)), 1e-6) << a;
    }
    EXPECT_EQ(x["labels"].size() + 0, y["labels"].size()) << a << "\n" << b;
    for (std::size_t k = 0; k < x["labels"].size() && k < y["labels"].size(); ++k)
      EXPECT_EQ(x["labels"][k]["label"], y["labels"][k]["label"]);
  }
  EXPECT_EQ(seen, 2);
  check_tuned_thresholds(dir, recipe, images);
}

// `trainrun shards` writes each picture's set as a json member ({"labels": [...]}, read back by
// Python's tarfile and json), and a run on those shards (webdataset, multilabel: true), with
// mixup/CutMix mixing the multi-hot rows, trains and evaluates every eval picture with the
// multi-label metrics.
TEST(Multilabel, ShardsCarryTheSetsAndTrainAsWebDataset) {
  test::TempDir dir;
  const std::string recipe = recipe_on_tiles(dir, 64);
  auto shards = test::run(test::trainrun("shards " + recipe + " --output " + (dir / "shards") + " --no-shuffle"));
  ASSERT_EQ(shards.code, 0) << shards.err;
  auto py = test::run(std::string(test::kPython) + " -c \"import json, sys, tarfile; t = tarfile.open(sys.argv[1]); "
                      "print(json.dumps([json.load(t.extractfile(m)) for m in t.getmembers() if m.name.endswith('.json')]))\" " +
                      (dir / "shards/train-000000.tar"));
  ASSERT_EQ(py.code, 0) << py.err;
  const auto samples = nlohmann::json::parse(py.out);
  ASSERT_EQ(samples.size(), 64u);
  // The first picture of the CSV, in the dataset's order (--no-shuffle): its classes' indices.
  const std::string first = test::read_file(dir / "data/train.csv").substr(std::string("image,labels\n").size());
  std::vector<std::string> classes;
  std::istringstream listed(test::read_file(dir / "shards/classes.txt"));
  for (std::string line; std::getline(listed, line);) classes.push_back(line);
  std::vector<int64_t> want;
  std::string row = first.substr(first.find(',') + 1, first.find('\n') - first.find(',') - 1);
  for (std::size_t at = 0; at != std::string::npos;) {
    const std::size_t bar = row.find('|', at);
    const std::string name = row.substr(at, bar == std::string::npos ? bar : bar - at);
    want.push_back(std::find(classes.begin(), classes.end(), name) - classes.begin());
    at = bar == std::string::npos ? bar : bar + 1;
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(samples[0]["labels"].get<std::vector<int64_t>>(), want) << samples[0].dump() << " vs the row " << row;

  const std::string on_shards = test::source("recipes/multilabel_resnet18.yaml") + " data.workers=1 train.epochs=1 " +
                                "'data.dataset={name: webdataset, urls: " + (dir / "shards/train-000000.tar") +
                                ", eval_urls: " + (dir / "shards/validation-000000.tar") + ", multilabel: true}' " +
                                "'data.mixup={mixup_alpha: 0.8, cutmix_alpha: 1.0, label_smoothing: 0}' output.dir=" + (dir / "run");
  auto run = test::run(test::trainrun(on_shards));
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json e = last_eval(dir / "run/metrics.jsonl");
  EXPECT_EQ(e["eval_examples"], 96);
  EXPECT_TRUE(e.contains("eval_map")) << e.dump();
}

// Exact resume: a run given a second epoch continues from its checkpoint with the same losses and
// the same multi-label metrics as a run of two epochs straight (the targets come from the loader,
// so nothing multi-label is in the checkpoint).
TEST(Multilabel, ARunResumedForASecondEpochEqualsTheUninterruptedOne) {
  test::TempDir dir;
  const std::string recipe = recipe_on_tiles(dir, 192) + " train.log_every_steps=1";
  auto straight = test::run(test::trainrun(recipe + " train.epochs=2 output.dir=" + (dir / "a")));
  ASSERT_EQ(straight.code, 0) << straight.err;
  auto first = test::run(test::trainrun(recipe + " train.epochs=1 output.dir=" + (dir / "b")));
  ASSERT_EQ(first.code, 0) << first.err;
  auto resumed = test::run(test::trainrun(recipe + " train.epochs=2 output.dir=" + (dir / "b")));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE((resumed.out + resumed.err).find("Continuing training from global step 3"), std::string::npos)
      << resumed.out << resumed.err;
  auto second_epoch = [](const std::string& metrics) {
    std::vector<nlohmann::json> out;
    for (auto line : test::read_jsonl(metrics))
      if (line["epoch"].get<double>() > 1.0 && (line.contains("loss") || line.contains("eval_map"))) {
        for (const char* timing : {"eval_runtime", "eval_samples_per_second", "data_wait_s", "elapsed_s",
                                   "samples_per_second", "step_time_s"})
          line.erase(timing);
        out.push_back(line);
      }
    return out;
  };
  const auto a = second_epoch(dir / "a/metrics.jsonl"), b = second_epoch(dir / "b/metrics.jsonl");
  ASSERT_GE(a.size(), 4u);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].dump(), b[i].dump());
  EXPECT_TRUE(a.back().contains("eval_map")) << a.back().dump();
}

TEST(Multilabel, TaskDataAndLossMismatchesAreOneLineEach) {
  test::TempDir dir;
  const std::string recipe = recipe_on_tiles(dir, 40);
  auto refused = [&](const std::string& overrides, const std::string& message) {
    auto r = test::run(test::trainrun("check " + recipe + " " + overrides));
    EXPECT_EQ(r.code, 2) << overrides << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << overrides << "\n" << r.err;
  };
  refused("train.task=single_label", "output.best_metric: eval_map: map is a multi-label metric, but train.task is single_label");
  refused("train.task=single_label output.best_metric=accuracy train.metrics=[accuracy]",
          "train.task: single_label, but data.dataset gives a set of labels per image; set train.task: multilabel");
  refused("train.loss=cross_entropy", "train.loss: cross_entropy is a softmax loss, but train.task is multilabel");
  refused("train.metrics=[top5]", "train.metrics: top5 is a single-label metric, but train.task is multilabel");
  refused("'scheduler={name: reduce_on_plateau, metric: balanced_accuracy}'",
          "scheduler.metric: balanced_accuracy is a single-label metric, but train.task is multilabel");
  refused("data.sampler=weighted", "data.sampler: weighted draws by each image's one class");
  refused("train.loss.pos_weight=[1,2]", "train.loss.pos_weight: 2 weights for 10 classes");
  auto tune = test::run(test::trainrun("eval " + test::source("recipes/quickstart.yaml") + " --checkpoint " + (dir / "none") +
                                       " --tune-thresholds"));
  EXPECT_EQ(tune.code, 2) << tune.err;
  EXPECT_NE(tune.err.find("eval --tune-thresholds: train.task is single_label"), std::string::npos) << tune.err;
  auto ok = test::run(test::trainrun("check " + recipe + " train.loss.pos_weight=auto"));
  EXPECT_EQ(ok.code, 0) << ok.err;
  // Bad rows of a labels file: left out with a count under data.on_bad_file: skip (the default),
  // the first one stops the job under error.
  test::write_file(dir / "data/train.csv", test::read_file(dir / "data/train.csv") +
                                               "images/gone.png,Bag|Coat\nimages/train_00000.png,Bag\n");
  auto skipped = test::run(test::trainrun("check " + recipe));
  EXPECT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_NE((skipped.out + skipped.err).find("data.dataset: 2 rows of its labels left out (data.on_bad_file: skip; error "
                                             "stops here): " + (dir / "data/train.csv") + ": line 42: image 'images/gone.png'"),
            std::string::npos)
      << skipped.out << skipped.err;
  refused("data.on_bad_file=error", (dir / "data/train.csv") + ": line 42: image 'images/gone.png': no such file");
}

}  // namespace
}  // namespace trainrun
