// data.eval_transforms: model (runner/recipe/pretrained.cpp), through the trainrun binary: the
// weights' config.json from a Hub stand-in on loopback (tests/py/hub_server.py) becomes timm's
// eval pipeline, `check` prints it (and fetches nothing unless --download), the resolved recipe
// holds it; local or no weights take the architecture's default pretrained_cfg.
#include "components/data/image.h"
#include "components/models/model.h"
#include "registry/registry.h"
#include "runner/io/weights.h"
#include "support/hub_server.h"
#include "test_util.h"

#include <torch/torch.h>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "89abcdef0123456789abcdef0123456789abcdef";

// Pets-like photos of two breeds, 3 channels (a recipe's `channels: 1` reads them as luma): the
// beagles landscape, the cats portrait, or all `square` x `square`.
void write_photos(const std::string& dir, int64_t square = 0) {
  fs::create_directories(dir);
  torch::manual_seed(0);
  for (int i = 1; i <= 6; ++i) {
    write_image(dir + "/beagle_" + std::to_string(i) + ".jpg",
                torch::randint(0, 256, {square ? square : 37, square ? square : 50, 3}, torch::kUInt8));
    write_image(dir + "/Abyssinian_" + std::to_string(i) + ".jpg",
                torch::randint(0, 120, {square ? square : 50, square ? square : 37, 3}, torch::kUInt8));
  }
}

// The lines `check` prints under `title`, up to the next line that is not indented.
std::vector<std::string> block(const std::string& out, const std::string& title) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (inside && line.rfind("  ", 0) != 0) break;
    if (inside) lines.push_back(line);
    if (line == title) inside = true;
  }
  return lines;
}

class EvalTransformsModel : public ::testing::Test {
 protected:
  void SetUp() override { write_photos(dir / "pets"); }

  // A recipe for `model` on the photos in `photos` with eval_transforms: model; its path.
  std::string recipe(const std::string& model, int channels = 1, const std::string& photos = "pets") const {
    test::write_file(dir / "r.yaml", "model: " + model + "\n" +
                                         "data:\n"
                                         "  dataset: {name: pets_folder, root: " + (dir / photos) + ", val_fraction: 0.25, channels: " +
                                         std::to_string(channels) + "}\n"
                                         "  train_transforms: [{resize: {size: [28, 28]}}, to_tensor, normalize]\n"
                                         "  eval_transforms: model\n"
                                         "  batch_size: 4\n"
                                         "  workers: 1\n"
                                         "train: {epochs: 1, loss: " + (model.find("basicnet") != std::string::npos ? "nll" : "cross_entropy") + "}\n"
                                         "world: {nproc_per_node: 1, threads_per_proc: 1}\n");
    return dir / "r.yaml";
  }

  // `trainrun ARGS` with the Hub cache in dir/hf and HF_ENDPOINT at `server` (or nowhere, offline).
  test::RunResult trainrun(const std::string& args, const test::HubServer* server = nullptr) const {
    std::string env = "env -u HF_HUB_CACHE -u HF_TOKEN " + std::string(server ? "-u HF_HUB_OFFLINE " : "") + "HF_HOME=" +
                      (dir / "hf") + " " + (server ? "HF_ENDPOINT=" + server->url() : std::string("HF_HUB_OFFLINE=1")) + " ";
    return test::run(env + test::trainrun(args));
  }

  test::TempDir dir;
};

TEST_F(EvalTransformsModel, HubConfigJsonBecomesTimmsEvalPipeline) {
  TensorList weights = state_dict(*Registry<Classifier>::instance().get("basicnet").make(
      Config(YAML::Load("{num_classes: 2, in_channels: 1, dropout1: 0.25, dropout2: 0.5}"))));
  save_safetensors(dir / "weights.safetensors", weights);
  // As timm's push_to_hf_hub writes it; 28 / 0.9 = 31.1, so the shorter side goes to 31.
  const nlohmann::json config_json = {
      {"architecture", "basicnet"}, {"num_classes", 2},
      {"pretrained_cfg", {{"input_size", {1, 28, 28}}, {"interpolation", "bicubic"}, {"crop_pct", 0.9},
                          {"crop_mode", "center"}, {"mean", {0.25}}, {"std", {0.5}}, {"num_classes", 2}}}};
  nlohmann::json hub = {
      {"repos",
       {{"test/basicnet",
         {{"revisions",
           {{"main",
             {{"commit", kCommit},
              {"files", {{"model.safetensors", {{"path", dir / "weights.safetensors"}}},
                         {"config.json", {{"text", config_json.dump(2)}, {"lfs", false}}}}}}}}}}}}}};
  test::HubServer server(hub, dir.path());
  ASSERT_GT(server.port(), 0);
  const std::string r = recipe("{name: basicnet, pretrained: 'hf-hub:test/basicnet'}");
  const std::vector<std::string> pipeline = {"  resize {size: 31, max_size: ~, interpolation: bicubic}",
                                             "  center_crop {size: [28, 28]}", "  to_tensor {}",
                                             "  normalize {mean: [0.25], std: [0.5]}"};

  // check fetches nothing: it says what a run would fetch, and that the pipeline waits for it.
  auto first = trainrun("check " + r, &server);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("\nnote: data.eval_transforms: model: hf-hub:test/basicnet@main: config.json would be downloaded from " +
                           server.url("/test/basicnet/resolve/main/config.json") + "\n"),
            std::string::npos) << first.out;
  EXPECT_NE(first.out.find("\neval transforms: model, from the weights' config.json, not downloaded yet: a run fetches it first "
                           "(or `trainrun check --download`)\n"),
            std::string::npos) << first.out;
  EXPECT_NE(first.out.find("\n  eval_transforms: model\n"), std::string::npos) << first.out;  // the resolved recipe
  EXPECT_EQ(server.requests().size(), 0u) << ::testing::PrintToString(server.requests());

  // check --download fetches config.json (and the weights) into the Hub cache and builds timm's pipeline.
  auto check = trainrun("check --download " + r, &server);
  ASSERT_EQ(check.code, 0) << check.err;
  EXPECT_EQ(block(check.out, "eval transforms (data.eval_transforms: model, from hf-hub:test/basicnet@main: config.json "
                             "(input_size [1, 28, 28], interpolation bicubic, crop_pct 0.9, crop_mode center)):"),
            pipeline) << check.out;
  EXPECT_EQ(block(check.out, "train transforms:"),
            (std::vector<std::string>{"  resize {size: [28, 28], max_size: ~, interpolation: bilinear}", "  to_tensor {}",
                                      "  normalize {mean: [0.1307], std: [0.3081]}"})) << check.out;
  EXPECT_EQ(server.count("GET /test/basicnet/resolve/main/config.json"), 1) << ::testing::PrintToString(server.requests());
  EXPECT_TRUE(fs::exists(dir / ("hf/hub/models--test--basicnet/snapshots/" + std::string(kCommit) + "/config.json")));

  // A run writes the pipeline into recipe.resolved.yaml, which builds the same one again.
  auto run = trainrun(r + " output.dir=" + (dir / "run"), &server);
  ASSERT_EQ(run.code, 0) << run.err;
  YAML::Node resolved = YAML::LoadFile(dir / "run/recipe.resolved.yaml");
  YAML::Emitter list;
  list << resolved["data"]["eval_transforms"];
  EXPECT_EQ(std::string(list.c_str()),
            "- resize:\n    size: 31\n    max_size: ~\n    interpolation: bicubic\n- center_crop:\n    size: [28, 28]\n"
            "- to_tensor: {}\n- normalize:\n    mean: [0.25]\n    std: [0.5]");
  auto again = trainrun("check " + (dir / "run/recipe.resolved.yaml"));  // offline: the list needs no config.json
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(block(again.out, "eval transforms:"), pipeline) << again.out;
}

// No config.json to read: the architecture's own pretrained_cfg (that of its published weights).
TEST_F(EvalTransformsModel, LocalOrNoWeightsTakeTheArchitecturesDefault) {
  TensorList weights = state_dict(*Registry<Classifier>::instance().get("resnet18").make(
      Config(YAML::Load("{num_classes: 2, drop_rate: 0.0, drop_path_rate: 0.0, zero_init_last: false}"))));
  save_safetensors(dir / "resnet18.safetensors", weights);
  auto r = trainrun("check " + recipe("{name: resnet18, pretrained: " + (dir / "resnet18.safetensors") + "}", 3));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(block(r.out, "eval transforms (data.eval_transforms: model, from resnet18's default pretrained_cfg "
                         "(hf-hub:timm/resnet18.tv_in1k's) (input_size [3, 224, 224], interpolation bilinear, crop_pct "
                         "0.875, crop_mode center)):"),
            (std::vector<std::string>{"  resize {size: 256, max_size: ~, interpolation: bilinear}", "  center_crop {size: [224, 224]}",
                                      "  to_tensor {}", "  normalize {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}"}))
      << r.out;

  r = trainrun("check " + recipe("{name: resnet50d}", 3));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(block(r.out, "eval transforms (data.eval_transforms: model, from resnet50d's default pretrained_cfg "
                         "(hf-hub:timm/resnet50d.ra2_in1k's) (input_size [3, 224, 224], interpolation bicubic, crop_pct "
                         "0.875, crop_mode center)):"),
            (std::vector<std::string>{"  resize {size: 256, max_size: ~, interpolation: bicubic}", "  center_crop {size: [224, 224]}",
                                      "  to_tensor {}", "  normalize {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}"}))
      << r.out;

  // basicnet evaluates its images as they come (PyTorch's MNIST example): 28 x 28 here.
  write_photos(dir / "pets28", 28);
  r = trainrun("check " + recipe("{name: basicnet}", 1, "pets28"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(block(r.out, "eval transforms (data.eval_transforms: model, from basicnet's default pretrained_cfg (mean 0.1307, "
                         "std 0.3081, no resize or crop)):"),
            (std::vector<std::string>{"  to_tensor {}", "  normalize {mean: [0.1307], std: [0.3081]}"})) << r.out;
}

TEST_F(EvalTransformsModel, DescribeAndOnlyForEvalTransforms) {
  auto r = trainrun("describe recipe/data");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("or `model`: the pretrained weights' own"), std::string::npos) << r.out;
  r = trainrun("check " + recipe("{name: basicnet}") + " data.train_transforms=model");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "command line 'data.train_transforms=model': data.train_transforms: expected a list, got 'model'\n");
  r = trainrun("check " + recipe("{name: basicnet}") + " data.eval_transforms=modle");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "command line 'data.eval_transforms=modle': data.eval_transforms: expected a list or 'model', got 'modle'\n");
}

}  // namespace
}  // namespace trainrun
