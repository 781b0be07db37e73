// Bad inputs of the files a model reads (docs/reference/bad-inputs.md; the fixture:
// bad_input.h): weights, safetensors, the Hub's config.json, labels.json, images to predict.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

TEST_F(BadInput, WeightsWithWrongKeys) {
  expect_bad_weights(weights("keys.safetensors", [](TensorList& t) { t[0].first = "convA.weight"; }),
                     "weights do not match the model: missing keys: conv1.weight; unexpected keys: convA.weight");
}

TEST_F(BadInput, WeightsWithWrongShapes) {
  expect_bad_weights(weights("shapes.safetensors", [](TensorList& t) { t[2].second = t[2].second.transpose(0, 1); }),
                     "weights do not match the model: wrong shapes: conv2.weight (file [32, 64, 3, 3], model [64, 32, 3, 3])");
}

// Half precision converts, as load_state_dict's copy_ does; integers for floats are not weights.
TEST_F(BadInput, WeightsWithWrongDtypes) {
  std::string half = weights("half.safetensors", [](TensorList& t) { t[1].second = t[1].second.to(torch::kBFloat16); });
  auto r = test::run(test::trainrun("check " + recipe() + " model.pretrained=" + half));
  EXPECT_EQ(r.code, 0) << r.err;
  expect_bad_weights(weights("int.safetensors", [](TensorList& t) { t[1].second = t[1].second.to(torch::kInt); }),
                     "weights do not match the model: wrong dtypes: conv1.bias (file I32, model F32)");
}

TEST_F(BadInput, TruncatedSafetensors) {
  std::string file = weights("cut.safetensors", [](TensorList&) {});
  const std::string bytes = test::read_file(file);
  uint64_t header = 0;
  for (int i = 0; i < 8; ++i) header |= uint64_t(uint8_t(bytes[std::size_t(i)])) << (8 * i);
  const uint64_t data = bytes.size() - 8 - header;
  test::write_file(file, bytes.substr(0, bytes.size() - 8));  // into fc2.bias, the last tensor
  expect_bad_weights(file, "truncated: tensor 'fc2.bias' ends at byte " + std::to_string(data) + " of " +
                               std::to_string(data - 8));
}

// A header that says conv1.bias has 33 values where its offsets hold 32.
TEST_F(BadInput, LyingSafetensors) {
  std::string file = weights("lying.safetensors", [](TensorList&) {});
  std::string bytes = test::read_file(file);
  auto at = bytes.find("\"conv1.bias\":{\"dtype\":\"F32\",\"shape\":[32]");
  ASSERT_NE(at, std::string::npos) << bytes.substr(0, 300);
  bytes[bytes.find("[32]", at) + 2] = '3';
  test::write_file(file, bytes);
  expect_bad_weights(file, "tensor 'conv1.bias': data_offsets do not match its shape and dtype");
}

TEST_F(BadInput, ConfigJsonMissing) {
  const std::string args = hub_config_args(std::nullopt);
  auto r = test::run(test::trainrun(args));
  expect_err(r, 2, "data.eval_transforms: model: hf-hub:test/net@main: config.json: repository or file not found: " +
                       hub_->url("/test/net/resolve/main/config.json") + "\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
  // check asks the Hub nothing: it says what a run would fetch.
  r = test::run(test::trainrun("check " + args));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: data.eval_transforms: model: hf-hub:test/net@main: config.json would be downloaded from " +
                       hub_->url("/test/net/resolve/main/config.json")),
            std::string::npos) << r.out;
}

TEST_F(BadInput, ConfigJsonNotJson) {
  expect_bad_config_json("<html><body>Too Many Requests</body></html>",
                         "not JSON: parse error at line 1, column 1: syntax error while parsing value - invalid literal; "
                         "last read: '<'");
}

TEST_F(BadInput, ConfigJsonMissingKey) {
  expect_bad_config_json(config_json([](nlohmann::json& cfg) { cfg.erase("crop_pct"); }),
                         "pretrained_cfg.crop_pct: missing (timm writes it in every pretrained_cfg)");
}

TEST_F(BadInput, ConfigJsonCropPctOutOfRange) {
  expect_bad_config_json(config_json([](nlohmann::json& cfg) { cfg["crop_pct"] = 1.5; }),
                         "pretrained_cfg.crop_pct: must be in (0, 1], got 1.5");
}

TEST_F(BadInput, BadLabelsJson) {
  ASSERT_EQ(test::run(test::trainrun(recipe() + " data.max_train_samples=64 train.eval_every=never")).code, 0);
  write_image(dir / "shoe.png", torch::zeros({28, 28, 1}, torch::kUInt8));
  test::write_file(dir / "run/labels.json", R"({"0": "T-shirt/top", "1x": "Trouser"})");
  auto before = contents(dir / "run");
  auto r = test::run(test::trainrun("predict " + recipe() + " --checkpoint " + (dir / "run") + " " + (dir / "shoe.png")));
  expect_err(r, 2, (dir / "run/labels.json") + ": not a labels file: key '1x' is not a class index from 0 to 1 (each once)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(contents(dir / "run"), before);
}

// An image predict cannot decode is skipped with a line naming it, the others classified, exit 1:
// with a recipe and its checkpoint, and with an exported model alone.
TEST_F(BadInput, PredictImageThatDoesNotDecode) {
  ASSERT_EQ(test::run(test::trainrun(recipe() + " data.max_train_samples=64 train.eval_every=never")).code, 0);
  ASSERT_EQ(test::run(test::trainrun("export " + recipe() + " --checkpoint " + (dir / "run") + " --format torchscript")).code, 0);
  write_image(dir / "shoe.png", torch::zeros({28, 28, 1}, torch::kUInt8));
  test::write_file(dir / "broken.png", "not a png");
  const std::string images = " " + (dir / "broken.png") + " " + (dir / "shoe.png");
  for (const std::string& form : {"predict " + recipe() + " --checkpoint " + (dir / "run"), "predict --model " + (dir / "run/model.pt")}) {
    auto r = test::run(test::trainrun(form + images));
    expect_err(r, 1, "warning: " + (dir / "broken.png") + ": cannot decode the image: not a JPEG, PNG, BMP, PPM/PGM, TIFF or WebP file "
                     "(judged by its first bytes) (skipped)\n");
    EXPECT_EQ(test::count_lines(r.out), 1) << form << "\n" << r.out;
  }
}

// predict's images: a file, a folder (its images, recursively) or a pattern; each must give one.
TEST_F(BadInput, PredictWithNothingToClassify) {
  fs::create_directories(dir / "empty/sub");
  test::write_file(dir / "empty/notes.txt", "not an image");
  test::write_file(dir / "model.pt", "");  // never read: the images are looked for first
  const std::string predict = "predict --model " + (dir / "model.pt") + " ";
  for (const auto& [image, line] : std::vector<std::pair<std::string, std::string>>{
           {dir / "empty", "predict: " + (dir / "empty") + ": a folder with no image files (searched recursively)"},
           {"'" + (dir / "empty/*.png") + "'", "predict: " + (dir / "empty/*.png") + ": no file matches"},
           {dir / "nope.png", "predict: " + (dir / "nope.png") + ": no such file or folder"}}) {
    auto r = test::run(test::trainrun(predict + image));
    expect_err(r, 2, line + "\n");
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace trainrun::bad_input
