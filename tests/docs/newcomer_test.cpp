// A newcomer's path through the site (issue 41): install -> quickstart -> own images on 2
// processes -> export -> predict. Each step's commands are a file under docs/commands/ that the
// pages include (`--8<--`) and README.md repeats; this test runs those files' lines with bash in a
// working folder laid out as a clone is (build/trainrun, recipes/, docs/recipes/, data/photos/),
// so a page whose command breaks fails here.
//
// Not run: docs/commands/install.sh (`make demo`, `make test`): that is what CI itself runs to
// build and start this test. Changed from the page, to keep the test short: every training command
// (`build/trainrun RECIPE.yaml ...`) gets kSmallRun appended (its trailing comment dropped). The
// Hub is a loopback stand-in serving a randomly initialised resnet18 as timm/resnet18.tv_in1k (the
// weights `pretrained: true` names); Fashion-MNIST is Debian's dataset-fashion-mnist. The whole path
// takes 15-18 s on the 2-core development machine.
#include "components/data/image.h"
#include "components/models/model.h"
#include "registry/registry.h"
#include "runner/io/weights.h"
#include "support/hub_server.h"
#include "support/finished_demo.h"
#include "support/published_weights.h"
#include "support/safetensors.h"
#include "test_util.h"

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TRAINRUN_SOURCE_DIR;
constexpr const char* kSmallRun = " train.epochs=1 data.max_train_samples=256 data.max_eval_samples=200";
// The files of the path, in the order a newcomer runs them.
const std::vector<std::string> kPath = {"quickstart", "own-images", "class-imbalance", "export", "predict"};
// README.md's block after its recipe: the own-images part of the path.
const std::vector<std::string> kReadme = {"own-images", "export", "predict"};

std::string command_file(const std::string& name) {
  return test::read_file((kSource / "docs/commands" / (name + ".sh")).string());
}

// The file's command lines (blank and comment-only lines left out).
std::vector<std::string> commands(const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(command_file(name));
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t") != std::string::npos && line[line.find_first_not_of(" \t")] != '#')
      out.push_back(line);
  return out;
}

// The run trained on 2 processes: its checkpoint's trainrun_state.json has a world of 2
// and each rank's batch count, and the banner in train.log says so.
void expect_two_processes(const fs::path& run) {
  fs::path checkpoint;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0 && e.path().filename() != "checkpoint-best")
      checkpoint = e.path();
  ASSERT_FALSE(checkpoint.empty()) << "no checkpoint in " << run;
  const auto state = nlohmann::json::parse(test::read_file((checkpoint / "trainrun_state.json").string()));
  EXPECT_EQ(state["world_size"], 2) << state.dump();
  ASSERT_EQ(state["ranks"].size(), 2u) << state.dump();
  for (const auto& rank : state["ranks"]) EXPECT_GT(rank["batches_total"].get<int64_t>(), 0) << state.dump();
  EXPECT_NE(test::read_file((run / "train.log").string()).find("World = 1 node x 2 processes"), std::string::npos);
}

bool is_training(const std::string& line) { return std::regex_search(line, std::regex(R"(^build/trainrun \S+\.ya?ml\b)")); }

std::string with_small_run(const std::string& line) {
  if (!is_training(line)) return line;
  return line.substr(0, line.find(" #")) + kSmallRun;
}

TEST(Docs, NewcomerPathCommandsAreOnPages) {
  std::set<std::string> included;
  const std::regex include(R"re(^\s*--8<--\s+"(docs/commands/[^"]+)"\s*$)re");
  for (const auto& e : fs::recursive_directory_iterator(kSource / "docs")) {
    if (e.path().extension() != ".md") continue;
    std::istringstream in(test::read_file(e.path().string()));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_match(line, m, include)) included.insert(m[1].str());
    }
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(kSource / "docs/commands")) {
    ++files;
    const std::string rel = fs::relative(e.path(), kSource).string();
    EXPECT_TRUE(included.count(rel)) << rel << " is on no page: include it in a ```sh block or remove it";
  }
  // install.sh is CI's own; lr-find, sweep and cv are run by DocsAfterDemo.FindingSettingsCommandsPrintWhatThePageShows.
  EXPECT_EQ(files, int(kPath.size()) + 4) << "a new docs/commands file: add it to kPath so that it runs";

  // README.md is plain GitHub markdown (no includes): its blocks are copies, compared here.
  const std::string readme = test::read_file((kSource / "README.md").string());
  EXPECT_NE(readme.find("```sh\n" + command_file("install") + "```\n"), std::string::npos)
      << "README.md's install block differs from docs/commands/install.sh";
  std::string path;
  for (const auto& name : kReadme) path += command_file(name);
  EXPECT_NE(readme.find("```sh\n" + path + "```\n"), std::string::npos)
      << "README.md's block after its recipe differs from docs/commands/{own-images,export,predict}.sh:\n" << path;
}

// The working folder a clone gives, with the photos, and the Hub stand-in.
class NewcomerPath {
 public:
  NewcomerPath() {
    fs::create_directories(work / "build");
    fs::create_directories(work / "docs");
    fs::create_symlink(TRAINRUN_BINARY, work / "build/trainrun");
    fs::create_directory_symlink(kSource / "recipes", work / "recipes");
    fs::create_directory_symlink(kSource / "docs/recipes", work / "docs/recipes");

    // Your photos: three classes, JPEG and PNG, of several sizes.
    torch::manual_seed(5);
    const std::vector<std::string> classes = {"cat", "dog", "fox"};
    for (std::size_t c = 0; c < classes.size(); ++c) {
      fs::create_directories(work / "data/photos" / classes[c]);
      for (int i = 0; i < 4; ++i) {
        const int64_t low = int64_t(c) * 80;
        write_image((work / "data/photos" / classes[c] / (std::to_string(i) + (i % 2 ? ".png" : ".jpg"))).string(),
                    torch::randint(low, low + 96, {48 + 8 * i, 64, 3}, torch::kUInt8));
      }
    }

    // timm/resnet18.tv_in1k as the Hub serves it: ImageNet-shaped weights and timm's config.json.
    const auto published = test::publish_weights("resnet18", dir / "weights.safetensors",
                                                 "0123456789abcdef0123456789abcdef01234567");
    repo = published.repo;
    const nlohmann::json hub = {{"repos", {{repo, {{"revisions", published.revisions}}}}}};
    server.emplace(hub, dir.path());
  }

  // Runs one line of a command file as the page shows it, in the working folder (a training
  // command cut to kSmallRun unless `as_written`).
  test::RunResult step(const std::string& line, bool as_written = false) const {
    const std::string script = dir / "step.sh";
    test::write_file(script, (as_written ? line : with_small_run(line)) + "\n");
    return test::run("cd '" + work.string() + "' && env -u HF_HUB_CACHE -u HF_HUB_OFFLINE -u HF_TOKEN HF_HOME='" +
                     (dir / "hf") + "' HF_ENDPOINT=" + server->url() + " bash -e '" + script + "'");
  }

  // Every line of docs/commands/NAME.sh exits 0; their results, in order.
  std::vector<test::RunResult> run_file(const std::string& name, bool as_written = false) const {
    std::vector<test::RunResult> results;
    for (const auto& line : commands(name)) {
      results.push_back(step(line, as_written));
      EXPECT_EQ(results.back().code, 0) << "docs/commands/" << name << ".sh: " << (as_written ? line : with_small_run(line))
                                        << "\n" << results.back().out << results.back().err;
    }
    return results;
  }

  std::string training_output(const std::string& name, const std::vector<test::RunResult>& results) const {
    const auto lines = commands(name);
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (is_training(lines[i])) return results[i].out;
    ADD_FAILURE() << "docs/commands/" << name << ".sh trains nothing";
    return "";
  }

  test::TempDir dir;
  fs::path work = dir.path() / "work";
  std::optional<test::HubServer> server;
  std::string repo;  // the Hub repo resnet18's `pretrained: true` names
};

// The path from Getting started on; `after_demo`: in the folder `make demo` leaves (a finished
// quickstart in runs/quickstart), where the first page's commands run as written.
void walk_the_path(const NewcomerPath& path, bool after_demo) {
  ASSERT_GT(path.server->port(), 0);
  const fs::path& work = path.work;

  // Getting started: the quickstart trains on 2 processes, checks, evaluates, lists, describes.
  // After the demo, its training command says the run is finished and trains nothing.
  auto quickstart = path.run_file("quickstart", after_demo);
  EXPECT_TRUE(fs::is_regular_file(work / "runs/quickstart/model.safetensors"));
  expect_two_processes(work / "runs/quickstart");
  for (const auto& r : quickstart) EXPECT_FALSE(r.out.empty());
  if (after_demo) {
    EXPECT_EQ(path.training_output("quickstart", quickstart),
              "runs/quickstart: finished at step 469 (epoch 1 of 1); nothing to train\n");
    // `check` with other overrides says what a run would do with the demo's folder.
    EXPECT_NE(quickstart[1].out.find("run folder: refuse (exit 2): runs/quickstart holds another run: optimizer.lr 0.001 -> "
                                     "0.0003; use output.dir=..., or output.resume=never to start over in it"),
              std::string::npos) << quickstart[1].out;
  }

  // Your own photos: check, then train on 2 processes with the Hub's resnet18.
  auto own = path.run_file("own-images");
  ASSERT_FALSE(own.empty());
  for (const std::string cls : {"cat", "dog", "fox"}) EXPECT_NE(own[0].out.find(cls), std::string::npos) << own[0].out;
  const fs::path run = work / "runs/own-images";
  ASSERT_TRUE(fs::is_regular_file(run / "model.safetensors")) << "no " << run / "model.safetensors";
  expect_two_processes(run);
  EXPECT_NE(path.training_output("own-images", own).find("Training completed."), std::string::npos);
  EXPECT_GE(path.server->count("HEAD /" + path.repo + "/resolve/main/model.safetensors"), 1)
      << ::testing::PrintToString(path.server->requests());
  path.run_file("class-imbalance");

  // Export: TorchScript and ONNX beside the weights.
  path.run_file("export");
  EXPECT_TRUE(fs::is_regular_file(run / "model.pt"));
  EXPECT_TRUE(fs::is_regular_file(run / "model.onnx"));

  // Predict: the images each line names (made here), one JSON line each, labelled with the run's classes.
  const auto labels = nlohmann::json::parse(test::read_file((run / "labels.json").string()));
  std::set<std::string> classes;
  for (const auto& [index, name] : labels.items()) classes.insert(name.get<std::string>());
  EXPECT_EQ(classes, (std::set<std::string>{"cat", "dog", "fox"}));
  const auto lines = commands("predict");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> images;
    const std::regex image(R"((\S+\.(jpg|jpeg|png))\b)");
    const std::string command = lines[i].substr(0, lines[i].find(" #"));
    for (std::sregex_iterator m(command.begin(), command.end(), image), end; m != end; ++m) images.push_back((*m)[1]);
    ASSERT_FALSE(images.empty()) << lines[i];
    for (const auto& name : images)
      if (!fs::exists(work / name)) write_image((work / name).string(), torch::randint(0, 256, {90, 120, 3}, torch::kUInt8));
    auto r = path.step(lines[i]);
    ASSERT_EQ(r.code, 0) << lines[i] << "\n" << r.out << r.err;
    std::vector<std::string> printed;
    std::istringstream out(r.out);
    for (std::string l; std::getline(out, l);) printed.push_back(l);
    ASSERT_EQ(printed.size(), images.size()) << lines[i] << "\n" << r.out;
    for (std::size_t k = 0; k < images.size(); ++k) {
      const auto line = nlohmann::json::parse(printed[k]);
      EXPECT_EQ(line["file"], images[k]) << printed[k];
      EXPECT_TRUE(classes.count(line["label"].get<std::string>())) << printed[k];
    }
  }
}

TEST(Docs, NewcomerPathCommandsRun) {
  NewcomerPath path;
  walk_the_path(path, false);
}

// Where a user stands after the README's first command: nothing on the path touches the demo's
// run, and its own commands do what the pages say. (Not a Docs. test: CI's docs stage, which runs
// those again with the site's tools required, need not repeat it.)
TEST(DocsAfterDemo, NewcomerPathCommandsRun) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  NewcomerPath path;
  const std::string made = test::add_finished_demo(path.work);
  ASSERT_TRUE(fs::is_regular_file(path.work / "runs/quickstart/model.safetensors")) << made;
  auto demo = test::snapshot(path.work / "runs/quickstart");
  walk_the_path(path, true);
  // Getting started's `eval` writes its report beside the weights it evaluated; nothing else changes.
  auto after = test::snapshot(path.work / "runs/quickstart");
  EXPECT_EQ(after.erase((path.work / "runs/quickstart/eval_report.json").string()), 1u);
  EXPECT_EQ(after, demo);
}

}  // namespace
}  // namespace trainrun
