// data.eval_transforms: model (components/data/transforms/timm_eval.h): the pipeline for a pretrained_cfg
// against timm's transforms_imagenet_eval re-derived on real torchvision (tests/py/timm_eval_ref.py),
// and config.json read as timm reads it, with one clear message per bad key.
#include "components/data/transform.h"
#include "components/data/transforms/timm_eval.h"
#include "runner/recipe/recipe.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

using nlohmann::json;

// A config.json as timm's push_to_hf_hub writes it, with `change` applied to its pretrained_cfg.
std::string timm_config_json(const std::function<void(json&)>& change = {}) {
  json cfg = {{"input_size", {3, 224, 224}}, {"interpolation", "bicubic"}, {"crop_pct", 0.95},
              {"crop_mode", "center"}, {"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}},
              {"num_classes", 1000}, {"test_input_size", {3, 288, 288}}, {"test_crop_pct", 1.0}, {"tag", "a1_in1k"}};
  if (change) change(cfg);
  return json{{"architecture", "resnet50d"}, {"num_classes", 1000}, {"num_features", 2048}, {"pretrained_cfg", cfg}}.dump();
}

std::string error_for(const std::string& text) {
  try {
    eval_data_config_from_json(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

// The list as a run holds it: checked and completed by the recipe engine, as pretrained.cpp does.
YAML::Node completed(const EvalDataConfig& c) {
  return check_transform_list(Recipe{"r.yaml", YAML::Node(), {}, {}}, timm_eval_transform_list(c), "data.eval_transforms");
}

std::shared_ptr<Transform> make(const YAML::Node& entry) {
  const std::string name = entry.begin()->first.as<std::string>();
  return Registry<Transform>::instance().get(name).make(Config(entry.begin()->second, name), ModelInput{});
}

TEST(TimmEval, ConfigJsonIsReadAsTimmReadsIt) {
  EvalDataConfig c = eval_data_config_from_json(timm_config_json());
  EXPECT_EQ(c.input_size, (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(c.interpolation, "bicubic");
  EXPECT_EQ(c.crop_pct, 0.95);  // not test_crop_pct: resolve_data_config's use_test_size=False, as train.py
  EXPECT_EQ(c.crop_mode, "center");
  EXPECT_EQ(c.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(c.std, (std::vector<double>{0.229, 0.224, 0.225}));
  EXPECT_TRUE(c.resize_and_crop);

  // The older flat form (_parse_model_cfg's legacy branch); crop_mode absent or null = center.
  json flat = json::parse(timm_config_json())["pretrained_cfg"];
  flat["architecture"] = "resnet50d";
  flat.erase("crop_mode");
  flat["input_size"] = {1, 32, 48};
  flat["mean"] = {0.5};
  flat["std"] = {0.25};
  c = eval_data_config_from_json(flat.dump());
  EXPECT_EQ(c.input_size, (std::vector<int64_t>{1, 32, 48}));
  EXPECT_EQ(c.crop_mode, "center");
  EXPECT_EQ(c.mean, std::vector<double>{0.5});
  c = eval_data_config_from_json(timm_config_json([](json& j) { j["crop_mode"] = nullptr; j["crop_pct"] = 1; }));
  EXPECT_EQ(c.crop_mode, "center");
  EXPECT_EQ(c.crop_pct, 1.0);
  EXPECT_EQ(eval_data_config_from_json(timm_config_json([](json& j) { j["crop_mode"] = "squash"; })).crop_mode, "squash");
}

TEST(TimmEval, BadConfigJsonNamesTheKey) {
  EXPECT_EQ(error_for("{\"architecture\": "), "not JSON: parse error at line 1, column 18: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(error_for("[1, 2]"), "expected a JSON object (timm's config.json), got [1,2]");
  EXPECT_EQ(error_for("{\"architectures\": [\"BertModel\"]}"),
            "pretrained_cfg: missing (not a timm config.json: it has neither pretrained_cfg nor architecture)");
  EXPECT_EQ(error_for("{\"pretrained_cfg\": 3}"), "pretrained_cfg: expected an object, got 3");
  for (const char* key : {"input_size", "interpolation", "crop_pct", "mean", "std"})
    EXPECT_EQ(error_for(timm_config_json([key](json& j) { j.erase(key); })),
              std::string("pretrained_cfg.") + key + ": missing (timm writes it in every pretrained_cfg)");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["crop_pct"] = nullptr; })),
            "pretrained_cfg.crop_pct: missing (timm writes it in every pretrained_cfg)");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["crop_pct"] = 1.5; })), "pretrained_cfg.crop_pct: must be in (0, 1], got 1.5");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["crop_pct"] = 0; })), "pretrained_cfg.crop_pct: must be in (0, 1], got 0");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["crop_pct"] = "0.9"; })),
            "pretrained_cfg.crop_pct: expected a number, got \"0.9\"");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["input_size"] = {224, 224}; })),
            "pretrained_cfg.input_size: expected [channels, height, width], got [224,224]");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["input_size"] = {3, 0, 224}; })),
            "pretrained_cfg.input_size: expected three positive integers, got [3,0,224]");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["interpolation"] = "lanczos"; })),
            "pretrained_cfg.interpolation: \"lanczos\" is not supported here (bilinear, bicubic, nearest)");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["crop_mode"] = "border"; })),
            "pretrained_cfg.crop_mode: \"border\" is not supported here (center, squash); 'border' pads with the mean "
            "colour, which center_crop does not do");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["mean"] = {0.5, 0.5}; })),
            "pretrained_cfg.mean: expected 3 numbers (one per input channel), got [0.5,0.5]");
  EXPECT_EQ(error_for(timm_config_json([](json& j) { j["std"] = {0.2, 0.0, 0.2}; })),
            "pretrained_cfg.std: expected positive numbers, got [0.2,0.0,0.2]");
}

// For each case: the first transform (its kind and size) is the one transforms_imagenet_eval
// builds, and an image of the case's size comes out of it, and out of the whole pipeline, at the
// sizes torchvision gives it there.
TEST(TimmEval, SizesAreTimmsOnTorchvision) {
  const json cases = json::parse(R"([
    {"input_size": [3, 224, 224], "crop_pct": 0.875, "image": [375, 500]},
    {"input_size": [3, 224, 224], "crop_pct": 0.95, "image": [500, 375]},
    {"input_size": [3, 224, 224], "crop_pct": 1.0, "image": [333, 333]},
    {"input_size": [3, 224, 224], "crop_pct": 1.0, "image": [100, 150]},
    {"input_size": [3, 288, 288], "crop_pct": 0.95, "image": [100, 701]},
    {"input_size": [3, 220, 220], "crop_pct": 0.55, "image": [480, 640]},
    {"input_size": [3, 299, 299], "crop_pct": 0.875, "image": [301, 302]},
    {"input_size": [3, 256, 192], "crop_pct": 0.9, "image": [375, 500]},
    {"input_size": [3, 192, 256], "crop_pct": 0.9, "image": [375, 500]},
    {"input_size": [3, 320, 240], "crop_pct": 1.0, "image": [480, 640]},
    {"input_size": [3, 100, 120], "crop_pct": 1.0, "image": [200, 245]},
    {"input_size": [3, 100, 120], "crop_pct": 1.0, "image": [200, 247]},
    {"input_size": [3, 220, 132], "crop_pct": 0.55, "image": [375, 500]},
    {"input_size": [1, 28, 28], "crop_pct": 0.875, "image": [30, 40]},
    {"input_size": [1, 28, 36], "crop_pct": 0.9, "image": [41, 29]},
    {"input_size": [3, 224, 160], "crop_pct": 0.95, "crop_mode": "squash", "image": [375, 500]},
    {"input_size": [3, 224, 224], "crop_pct": 0.875, "crop_mode": "squash", "image": [375, 500]}
  ])");
  test::TempDir dir;
  test::write_file(dir / "cases.json", cases.dump());
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/timm_eval_ref.py") + " " + (dir / "cases.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    ASSERT_LT(i, cases.size());
    const json& c = cases[i];
    const json want = json::parse(line);
    SCOPED_TRACE(c.dump() + " -> timm: " + line);
    EvalDataConfig config;
    config.input_size = c["input_size"].get<std::vector<int64_t>>();
    config.interpolation = "bilinear";
    config.crop_pct = c["crop_pct"].get<double>();
    config.crop_mode = c.value("crop_mode", "center");
    config.mean.assign(std::size_t(config.input_size[0]), 0.5);
    config.std.assign(std::size_t(config.input_size[0]), 0.25);
    YAML::Node list = completed(config);
    ASSERT_EQ(list.size(), 4u);

    const std::string first = list[0].begin()->first.as<std::string>();
    const YAML::Node size = list[0].begin()->second["size"];
    EXPECT_EQ(first, want["first"][0] == "ResizeKeepRatio" ? "resize_keep_ratio" : "resize");
    if (want["first"][1].is_number()) {
      ASSERT_TRUE(size.IsScalar());
      EXPECT_EQ(size.as<int64_t>(), want["first"][1].get<int64_t>());
    } else {
      EXPECT_EQ(size.as<std::vector<int64_t>>(), want["first"][1].get<std::vector<int64_t>>());
    }
    EXPECT_EQ(list[1]["center_crop"]["size"].as<std::vector<int64_t>>(),
              (std::vector<int64_t>{config.input_size[1], config.input_size[2]}));

    const auto h = c["image"][0].get<int64_t>(), w = c["image"][1].get<int64_t>();
    at::Tensor image = torch::zeros({h, w, config.input_size[0]}, torch::kUInt8);
    Rng rng(0);
    at::Tensor resized = (*make(list[0]))(image, rng);
    EXPECT_EQ(std::vector<int64_t>({resized.size(0), resized.size(1)}), want["resized"].get<std::vector<int64_t>>());
    std::vector<std::shared_ptr<Transform>> steps;
    for (const auto& entry : list) steps.push_back(make(entry));
    at::Tensor out = Compose(steps)(image, rng);
    EXPECT_EQ(out.sizes().vec(), want["output"].get<std::vector<int64_t>>());
  }
  EXPECT_EQ(i, cases.size());
}

TEST(TimmEval, TheListAsTheResolvedRecipeShowsIt) {
  EvalDataConfig c = eval_data_config_from_json(timm_config_json());
  YAML::Emitter out;
  out << YAML::Flow << completed(c);
  EXPECT_EQ(std::string(out.c_str()),
            "[{resize: {size: 235, max_size: ~, interpolation: bicubic}}, {center_crop: {size: [224, 224]}}, "
            "{to_tensor: {}}, {normalize: {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}}]");
  // No resize and no crop (BasicNet's MNIST example): to_tensor and normalize only.
  c.resize_and_crop = false;
  c.mean = {0.1307};
  c.std = {0.3081};
  YAML::Emitter plain;
  plain << YAML::Flow << completed(c);
  EXPECT_EQ(std::string(plain.c_str()), "[{to_tensor: {}}, {normalize: {mean: [0.1307], std: [0.3081]}}]");
}

}  // namespace
}  // namespace trainrun
