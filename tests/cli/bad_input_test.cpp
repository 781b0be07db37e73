// The table "Bad inputs: what you see" (docs/reference/bad-inputs.md), one test per row:
// the real trainrun binary on a fixture the test writes, checking the line the user reads, the exit
// code (2: nothing started or written; 1: failed after starting; 130/138: stopped after a
// checkpoint) and what is left on disk. Other suites test many of these cases more deeply; here
// each row is checked as the table states it.
//
// The page's "what you see" and "exit" cells are written by these tests, never by hand: each test
// records the lines and exit codes it checked (its temporary folder left out of paths, values that
// differ from run to run shown as <port>, <step>, ...) and fails while its row says otherwise;
// `make docs-reference` runs them with TRAINRUN_UPDATE_DOCS=1, which rewrites the two cells of each
// row instead. The other cells (the input, what is left on disk) are prose the page keeps.
#include "components/data/image.h"
#include "components/models/model.h"
#include "registry/registry.h"
#include "support/hub_server.h"
#include "support/markdown_table.h"
#include "support/safetensors.h"
#include "runner/io/weights.h"
#include "test_util.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// A small Fashion-MNIST run: 8 optimizer steps in one process, a few seconds with everything.
// Line numbers in the tests below are this text's.
constexpr const char* kRecipe = R"(name: bad_input
model: {name: basicnet}
data:
  dataset: {name: mnist, root: /usr/share/datasets/fashion-mnist}
  train_transforms: [to_tensor, normalize]
  batch_size: 32
  max_train_samples: 256
  max_eval_samples: 100
  workers: 1
optimizer: {name: adamw, lr: 1.0e-3}
train: {epochs: 1, loss: nll, log_every_steps: 2}
world: {nproc_per_node: 1, master_port: 0, threads_per_proc: 1}
)";

// A socket bound to a loopback port the kernel picks: listening (a busy port) or not (nobody
// answers there, and no other process can take the port while the test holds it).
class LoopbackPort {
 public:
  explicit LoopbackPort(bool listen) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(listen ? INADDR_ANY : INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    if (listen) ::listen(fd_, 1);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
};

// Whether `text` has `line` as one of its lines (ranks write theirs in any order).
bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

std::string last_line(const std::string& text) {
  std::string s = text.substr(0, text.size() - (!text.empty() && text.back() == '\n'));
  return s.substr(s.rfind('\n') + 1);
}

// docs/reference/bad-inputs.md (its rows read with tests/support/markdown_table.h).
const std::string kPage = "docs/reference/bad-inputs.md";

// The index of the page's line whose last cell names `test` (`BadInput.Name`), or npos.
std::size_t row_of(const std::vector<std::string>& lines, const std::string& test) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("| ", 0) != 0) continue;
    auto c = test::table_cells(lines[i]);
    if (!c.empty() && c.back().find("`" + test + "`") != std::string::npos) return i;
  }
  return std::string::npos;
}

// A line as a Markdown code span (a line holding a backtick in double backticks).
std::string code_span(const std::string& line) {
  return line.find('`') == std::string::npos ? "`" + line + "`" : "`` " + line + " ``";
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }

  // The page's row for this test: its "what you see" cell (the recorded lines) and "exit" cell
  // (the recorded codes) equal what the test checked, or with TRAINRUN_UPDATE_DOCS=1 become it.
  void TearDown() override {
    if (HasFailure() || IsSkipped() || seen_.empty()) return;
    const std::string name = std::string("BadInput.") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string see, exit;
    for (const auto& line : seen_) {
      EXPECT_EQ(line.find('|'), std::string::npos) << "a '|' would end the table cell: " << line;
      see += (see.empty() ? "" : "<br>") + code_span(line);
    }
    for (int code : codes_) exit += (exit.empty() ? "" : ", ") + std::to_string(code);
    const std::string path = test::source(kPage);
    const bool update = std::getenv("TRAINRUN_UPDATE_DOCS") != nullptr;
    int lock = update ? ::open(path.c_str(), O_RDONLY) : -1;  // tests run in parallel: one writer at a time
    if (lock >= 0) ::flock(lock, LOCK_EX);
    auto lines = test::page_lines(path);
    std::size_t at = row_of(lines, name);
    if (at == std::string::npos) {
      ADD_FAILURE() << kPage << " has no row naming `" << name << "`; add one (input | " << see << " | " << exit
                    << " | what is left on disk | `" << name << "`)";
    } else {
      auto c = test::table_cells(lines[at]);
      if (c.size() != 5) {
        ADD_FAILURE() << kPage << ":" << at + 1 << ": expected 5 cells, found " << c.size();
      } else if (update) {
        lines[at] = "| " + c[0] + " | " + see + " | " + exit + " | " + c[3] + " | " + c[4] + " |";
        std::string text;
        for (const auto& l : lines) text += l + "\n";
        std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      } else {
        EXPECT_EQ(c[1], see) << kPage << ":" << at + 1 << ": the lines this test checks differ from the row's "
                             << "(make docs-reference rewrites the row)";
        EXPECT_EQ(c[2], exit) << kPage << ":" << at + 1 << ": the exit codes differ (make docs-reference rewrites the row)";
      }
    }
    if (lock >= 0) ::close(lock);
  }

  // `display` stands for `actual` in the lines recorded after this (a port, a step number).
  void shown_as(const std::string& actual, const std::string& display) { shown_.emplace_back(actual, display); }

  // Records each line of `text` (as the page shows it) and `code`, each once, in order.
  void saw(const std::string& text, int code) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      for (const auto& [actual, display] : shown_)
        for (std::size_t at; (at = line.find(actual)) != std::string::npos;) line.replace(at, actual.size(), display);
      const std::string tmp = dir.path().string() + "/";
      for (std::size_t at; (at = line.find(tmp)) != std::string::npos;) line.erase(at, tmp.size());
      if (std::find(seen_.begin(), seen_.end(), line) == seen_.end()) seen_.push_back(line);
    }
    if (std::find(codes_.begin(), codes_.end(), code) == codes_.end()) codes_.push_back(code);
  }

  // `r` exited with `code` and printed exactly `err` on stderr; recorded for the page.
  void expect_err(const test::RunResult& r, int code, const std::string& err) {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err, err);
    saw(err, code);
  }

  // kRecipe with `from` replaced by `to`, written to recipe.yaml with output.dir = run; its path.
  std::string recipe(const std::string& from = "", const std::string& to = "") const {
    std::string text = kRecipe;
    if (!from.empty()) {
      auto at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) text.replace(at, from.size(), to);
    }
    test::write_file(dir / "recipe.yaml", text + "output: {dir: " + (dir / "run") + "}\n");
    return dir / "recipe.yaml";
  }

  // `trainrun check ARGS` and `trainrun ARGS` both exit 2 with `line` as all of stderr, and the
  // run leaves no run folder.
  void expect_bad_input(const std::string& args, const std::string& line) {
    for (const std::string command : {"check ", ""}) {
      auto r = test::run(test::trainrun(command + args));
      EXPECT_EQ(r.code, 2) << command << args << "\n" << r.err;
      EXPECT_EQ(r.err, line + "\n") << command << args;
    }
    EXPECT_FALSE(fs::exists(dir / "run"));
    saw(line, 2);
  }

  // A 2-process run of 200 steps per rank, logging every 2; `then` runs once the first loss is
  // logged (with $L the launcher's pid). Prints the exit code as "rc=N"; stderr is in dir/err.
  test::RunResult long_run_and(const std::string& then) const {
    std::string cmd = test::trainrun(recipe() + " world.nproc_per_node=2 data.max_train_samples=12800 world.timeout_s=30");
    return test::run("bash -c '" + cmd + " >" + (dir / "out") + " 2>" + (dir / "err") + " & L=$!; " +
                     "for i in $(seq 600); do grep -q loss " + (dir / "out") + " && break; sleep 0.1; done; " + then +
                     "; wait $L; echo rc=$?'");
  }

  // SIGINT/SIGTERM/SIGUSR1 on the launcher: both ranks stop after the same step N with a
  // checkpoint-N, each saying so; the launcher's line is the last. Returns N.
  std::string expect_stopped_with_checkpoint(const std::string& signal, const std::string& reason, int code,
                                             const std::string& launcher_line) {
    auto r = long_run_and("kill -" + signal + " $L");
    std::string err = test::read_file(dir / "err");
    EXPECT_EQ(r.out, "rc=" + std::to_string(code) + "\n") << err;
    std::smatch m;
    std::regex rank0("(^|\n)rank 0: interrupted \\(" + reason + "\\) at step (\\d+); checkpoint saved\n");
    if (!std::regex_search(err, m, rank0)) {
      ADD_FAILURE() << err;
      return "";
    }
    std::string step = m[2].str();
    EXPECT_TRUE(has_line(err, "rank 1: interrupted (" + reason + ") at step " + step + "; checkpoint saved")) << err;
    EXPECT_EQ(last_line(err), launcher_line) << err;
    EXPECT_TRUE(fs::exists(dir / ("run/checkpoint-" + step + "/trainer_state.json"))) << err;
    EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
    shown_as("step " + step + ";", "step <step>;");
    saw("rank 0: interrupted (" + reason + ") at step " + step + "; checkpoint saved\nrank 1: interrupted (" + reason +
            ") at step " + step + "; checkpoint saved\n" + launcher_line, code);
    return step;
  }

  // BasicNet's state_dict for Fashion-MNIST's 10 classes, with `change` applied, as safetensors.
  std::string weights(const std::string& name, const std::function<void(TensorList&)>& change) const {
    YAML::Node cfg = YAML::Load("{name: basicnet, in_channels: 1, dropout1: 0.25, dropout2: 0.5, pretrained: null}");
    cfg["num_classes"] = 10;
    TensorList tensors = state_dict(*Registry<Classifier>::instance().get("basicnet").make(Config(cfg, "model")));
    change(tensors);
    save_safetensors(dir / name, tensors);
    return dir / name;
  }

  // `trainrun ARGS model.pretrained=FILE` is exit 2 with `problem` after "model.pretrained: FILE: ";
  // nothing is written and the file is left as it was.
  void expect_bad_weights(const std::string& file, const std::string& problem) {
    std::string before = test::read_file(file);
    expect_bad_input(recipe() + " model.pretrained=" + file, "model.pretrained: " + file + ": " + problem);
    EXPECT_TRUE(test::read_file(file) == before);
  }

  // Pets-like photos of two breeds and one .jpg that is not an image at all; the recipe, and the
  // line that names that file.
  std::string corrupt_pets_recipe() const {
    fs::create_directories(dir / "pets");
    for (int i = 1; i <= 8; ++i)
      for (std::string breed : {"Abyssinian", "beagle"})
        write_image(dir / ("pets/" + breed + "_" + std::to_string(i) + ".jpg"), torch::full({28, 28, 3}, i * 20, torch::kUInt8));
    test::write_file(dir / "pets/beagle_77.jpg", "not a jpeg at all");
    return recipe() + " 'data.dataset={name: pets_folder, root: " + (dir / "pets") + ", channels: 1, val_fraction: 0.25}'";
  }
  std::string corrupt_line() const {
    return (dir / "pets/beagle_77.jpg") +
           ": cannot decode the image: not a JPEG, PNG, BMP, PPM/PGM, TIFF or WebP file (judged by its first bytes)";
  }

  // The arguments for model.pretrained: hf-hub:test/net with data.eval_transforms: model, from a
  // Hub stand-in whose test/net holds `config_json` as config.json (none when nullopt).
  std::string hub_config_args(const std::optional<std::string>& config_json) {
    nlohmann::json files = nlohmann::json::object();
    if (config_json) files["config.json"] = {{"text", *config_json}, {"lfs", false}};
    nlohmann::json main = {{"commit", "fedcba9876543210fedcba9876543210fedcba98"}, {"files", files}};
    hub_.emplace(nlohmann::json{{"repos", {{"test/net", {{"revisions", {{"main", main}}}}}}}}, dir.path());
    env_.set("HF_HOME", dir / "hf");
    env_.set("HF_ENDPOINT", hub_->url());
    shown_as(hub_->url(), "$HF_ENDPOINT");
    env_.set("HF_HUB_CACHE", std::nullopt);
    env_.set("HF_HUB_OFFLINE", std::nullopt);
    return recipe() + " model.pretrained=hf-hub:test/net data.eval_transforms=model";
  }

  // A config.json that is there but wrong: `trainrun ARGS` (which fetches it) and then `trainrun
  // check ARGS` (which reads the copy now cached; check downloads nothing) both exit 2 with
  // "data.eval_transforms: model: hf-hub:test/net@main: config.json: " + `problem` as all of stderr.
  void expect_bad_config_json(const std::string& config_json, const std::string& problem) {
    const std::string args = hub_config_args(config_json);
    const std::string line = "data.eval_transforms: model: hf-hub:test/net@main: config.json: " + problem;
    for (const std::string command : {"", "check "}) {
      auto r = test::run(test::trainrun(command + args));
      EXPECT_EQ(r.code, 2) << command << args << "\n" << r.err;
      EXPECT_EQ(r.err, line + "\n") << command << args;
    }
    EXPECT_FALSE(fs::exists(dir / "run"));
    saw(line, 2);
  }

  // timm's config.json for a 28x28 one-channel net with `change` applied to its pretrained_cfg.
  static std::string config_json(const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json cfg = {{"input_size", {1, 28, 28}}, {"interpolation", "bilinear"}, {"crop_pct", 0.875},
                          {"crop_mode", "center"}, {"mean", {0.2860}}, {"std", {0.3530}}};
    change(cfg);
    return nlohmann::json{{"architecture", "basicnet"}, {"num_classes", 10}, {"pretrained_cfg", cfg}}.dump();
  }

  test::TempDir dir;
  std::optional<test::HubServer> hub_;
  test::ScopedEnv env_;
  std::vector<std::string> seen_;                            // the lines checked, as the page shows them
  std::vector<int> codes_;                                   // the exit codes checked
  std::vector<std::pair<std::string, std::string>> shown_;   // actual -> display, for values that vary
};

// Everything in `dir`, for "left as it was" checks.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    out[e.path().string()] = e.is_regular_file() ? test::read_file(e.path().string()) : "(folder)";
  return out;
}

TEST_F(BadInput, YamlSyntax) {
  expect_bad_input(recipe("lr: 1.0e-3}", "lr: 1.0e-3"),
                   (dir / "recipe.yaml") + ":11:6: YAML syntax error: end of map flow not found");
}

TEST_F(BadInput, MisspeltSection) {
  expect_bad_input(recipe("optimizer:", "optimzer:"), (dir / "recipe.yaml") + ":10:1: optimzer: unknown key (did you mean 'optimizer'?)");
}

TEST_F(BadInput, MisspeltKeyInASection) {
  expect_bad_input(recipe("batch_size:", "batch_sise:"),
                   (dir / "recipe.yaml") + ":6:3: data.batch_sise: unknown key (did you mean 'batch_size'?)");
}

TEST_F(BadInput, MisspeltComponentParameter) {
  expect_bad_input(recipe("{name: basicnet}", "{name: basicnet, dropout: 0.1}"),
                   (dir / "recipe.yaml") + ":2:25: model.dropout: unknown key (did you mean 'dropout1'?)");
}

TEST_F(BadInput, MisspeltKeyInAListItem) {
  expect_bad_input(recipe("[to_tensor, normalize]", "[to_tensor, {normalize: {meen: model}}]"),
                   (dir / "recipe.yaml") + ":5:46: data.train_transforms[1].normalize.meen: unknown key (did you mean 'mean'?)");
}

// A key the command line misspells, in a section or as the section itself, names the override.
TEST_F(BadInput, MisspeltKeyInAnOverride) {
  expect_bad_input(recipe() + " optimizer.lrr=1", "command line 'optimizer.lrr=1': optimizer.lrr: unknown key (did you mean 'lr'?)");
  expect_bad_input(recipe() + " wrld.nproc_per_node=2",
                   "command line 'wrld.nproc_per_node=2': wrld: unknown key (did you mean 'world'?)");
}

TEST_F(BadInput, WrongType) {
  expect_bad_input(recipe("epochs: 1", "epochs: two"), (dir / "recipe.yaml") + ":11:17: train.epochs: expected an integer, got 'two'");
}

TEST_F(BadInput, OutOfRangeValue) {
  expect_bad_input(recipe("batch_size: 32", "batch_size: 0"), (dir / "recipe.yaml") + ":6:15: data.batch_size: must be >= 1, got 0");
  expect_bad_input(recipe() + " model.name=resnet18 model.drop_path_rate=1.0",
                   "command line 'model.drop_path_rate=1.0': model.drop_path_rate: must be < 1, got 1.0");
}

// Schedules (issue 29): keys that conflict, a schedule that cannot run under this recipe, a value
// only the schedule can judge against the optimizer; each before the run starts.
TEST_F(BadInput, SchedulerKeys) {
  expect_bad_input(recipe() + " 'scheduler={name: linear, warmup_steps: 2, warmup_ratio: 0.1}'",
                   "scheduler.warmup_ratio: set warmup_steps or warmup_ratio, not both");
  expect_bad_input(recipe() + " 'scheduler={name: reduce_on_plateau}' train.eval_every=never",
                   "scheduler.name: reduce_on_plateau decides after each evaluation, and train.eval_every is never");
  expect_bad_input(recipe() + " 'scheduler={name: reduce_on_plateau, metric: f1}'",
                   "command line 'scheduler={name: reduce_on_plateau, metric: f1}': scheduler.metric: unknown value 'f1'; one of: "
                   "eval_loss, eval_accuracy, eval_top5, loss, accuracy, top5");
  expect_bad_input(recipe() + " 'scheduler={name: polynomial, lr_end: 0.01}'",
                   "scheduler.lr_end: 0.01 must be smaller than optimizer.lr 0.001 (transformers raises here too)");
  expect_bad_input(recipe() + " 'scheduler={name: onecycle, max_lr: 0.01, warmup_steps: 2}'",
                   "command line 'scheduler={name: onecycle, max_lr: 0.01, warmup_steps: 2}': scheduler.warmup_steps: unknown key");
}

// Augmentation parameters (issue 28): a value the schema bounds is refused with its line and
// column; one only the transform can judge (a relation between keys, a channel count) is refused
// by the preflight's sample, naming the transform; both before anything is written.
TEST_F(BadInput, AugmentationParameters) {
  const std::string tf = "train_transforms: [to_tensor, normalize]";
  auto with = [&](const std::string& transforms) { return recipe(tf, "train_transforms: " + transforms); };
  expect_bad_input(with("[color_jitter: {hue: 0.7}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:42: data.train_transforms[0].color_jitter.hue: must be <= 0.5, got 0.7");
  expect_bad_input(with("[auto_augment: {policy: coco}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:45: data.train_transforms[0].auto_augment.policy: unknown value 'coco'; one of: imagenet, cifar10, svhn");
  expect_bad_input(with("[resize: {size: 32, interpolation: lanczos}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:56: data.train_transforms[0].resize.interpolation: unknown value 'lanczos'; one of: bilinear, bicubic, nearest");
  expect_bad_input(with("[rand_augment: {magnitude: 31}, to_tensor]"),
                   "data.train_transforms[0]: magnitude: must be < num_magnitude_bins (31)");
  expect_bad_input(with("[color_jitter: {brightness: [1.5, 0.5]}, to_tensor]"),
                   "data.train_transforms[0]: brightness: expected one number or [min, max] with min <= max");
  expect_bad_input(with("[gaussian_blur: {kernel_size: 4}, to_tensor]"),
                   "data.train_transforms[0]: kernel_size: expected odd numbers, one or [width, height]");
  expect_bad_input(with("[random_affine: {degrees: 10, shear: [1, 2, 3]}, to_tensor]"),
                   "data.train_transforms[0]: shear: expected one number, [min, max] or [x0, x1, y0, y1]");
  expect_bad_input(with("[random_erasing: {p: 1.0}, to_tensor]"),
                   "data.train_transforms: cannot transform an example: random_erasing: needs a float C x H x W tensor; put it after to_tensor");
  expect_bad_input(with("[to_tensor, random_erasing: {value: [1, 2]}]"),
                   "data.train_transforms: cannot transform an example: random_erasing: 2 values for an image with 1 channels");
}

// data.mixup: checked under its own path; not together with a mixup in batch_transforms.
TEST_F(BadInput, MixupKey) {
  const std::string tf = "train_transforms: [to_tensor, normalize]";
  expect_bad_input(recipe(tf, tf + "\n  mixup: {mixup_alpha: -1}"),
                   (dir / "recipe.yaml") + ":6:24: data.mixup.mixup_alpha: must be >= 0, got -1");
  expect_bad_input(recipe(tf, tf + "\n  mixup: {mode: row}"),
                   (dir / "recipe.yaml") + ":6:17: data.mixup.mode: unknown value 'row'; one of: batch, pair, elem");
  expect_bad_input(recipe(tf, tf + "\n  mixup: {}\n  batch_transforms: [mixup]"),
                   (dir / "recipe.yaml") + ":6:10: data.mixup: data.batch_transforms has a mixup already; give one of the two");
}

// optimizer.layer_decay / groups, the freeze rules' lr_scale, train.ema and the best-model keys.
TEST_F(BadInput, ParamGroupEmaAndBestModelKeys) {
  const std::string opt = "optimizer: {name: adamw, lr: 1.0e-3";
  expect_bad_input(recipe(opt, opt + ", layer_decay: 1.5"), (dir / "recipe.yaml") + ":10:51: optimizer.layer_decay: must be <= 1, got 1.5");
  expect_bad_input(recipe(opt, opt + ", groups: [{params: 'fc*', lr_scal: 2}]"), (dir / "recipe.yaml") + ":10:63: optimizer.groups[0].lr_scal: unknown key (did you mean 'lr_scale'?)");
  expect_bad_input(recipe(opt, opt + ", groups: [{lr_scale: 2}]"), (dir / "recipe.yaml") + ":10:47: optimizer.groups[0].params: missing (glob over parameter names (`fc.*`, `layer4.*`))");
  const std::string train = "log_every_steps: 2}";
  expect_bad_input(recipe(train, "log_every_steps: 2, ema: {decya: 0.9}}"), (dir / "recipe.yaml") + ":11:57: train.ema.decya: unknown key (did you mean 'decay'?)");
  expect_bad_input(recipe(train, "log_every_steps: 2, ema: {decay: 2}}"), (dir / "recipe.yaml") + ":11:64: train.ema.decay: must be <= 1, got 2");
  expect_bad_input(recipe() + " 'freeze=[{params: \"*\", trainable: true, lr_scale: 0}]'", "command line 'freeze=[{params: \"*\", trainable: true, lr_scale: 0}]': freeze[0].lr_scale: must be > 0, got 0");
  expect_bad_input(recipe() + " train.eval_every=never output.load_best_model_at_end=true", "output.load_best_model_at_end: needs evaluated checkpoints to choose from, but train.eval_every is never");
  expect_bad_input(recipe() + " output.metric_for_best_model=ema_accuracy", "output.best_metric: eval_ema_accuracy is an EMA metric, but train.ema is null");
  expect_bad_input(recipe() + " output.best_metric=accuracy output.metric_for_best_model=top5", "output.metric_for_best_model: eval_top5 and output.best_metric: eval_accuracy name different metrics; give one");
}

// Fewer outputs than the data has classes would fail only at the first batch with a higher label
// (after the run folder was written); more outputs are allowed (a head with spare classes).
TEST_F(BadInput, FewerModelOutputsThanClasses) {
  expect_bad_input(recipe("{name: basicnet}", "{name: basicnet, num_classes: 3}"),
                   "model.num_classes: 3 outputs for a dataset of 10 classes (labels 0-9); use auto, or 10 or more");
  auto r = test::run(test::trainrun("check " + recipe() + " model.num_classes=12"));
  EXPECT_EQ(r.code, 0) << r.err;
}

// train.loss.weight: one number per model output (F.cross_entropy raises at the first batch
// otherwise), each >= 0, not all 0; `balanced` needs every class in the training split, as sklearn.
TEST_F(BadInput, LossWeightOfTheWrongLength) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [1, 2, 3]}"),
                   "train.loss.weight: 3 weights for 10 classes (model.num_classes); give one per class, or balanced");
}

TEST_F(BadInput, NegativeLossWeight) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [1, 1, 1, -0.5, 1, 1, 1, 1, 1, 1]}"),
                   (dir / "recipe.yaml") + ":11:46: train.loss.weight: item 3: must be >= 0, got -0.5");
}

TEST_F(BadInput, AllLossWeightsZero) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"),
                   "train.loss.weight: every weight is 0, so the weighted mean loss is 0 / 0; give some class a weight > 0");
}

TEST_F(BadInput, MisspeltLossWeightWord) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: balance}"),
                   (dir / "recipe.yaml") + ":11:46: train.loss.weight: expected a list[float] or 'balanced', got 'balance' "
                                      "(did you mean 'balanced'?)");
}

// Fashion-MNIST's first 5 training labels are 9, 0, 0, 3, 0: no trouser (1) to count.
TEST_F(BadInput, BalancedLossWeightWithAClassMissingFromTraining) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: balanced}") + " data.max_train_samples=5",
                   "train.loss.weight: balanced: class '1' (label 1) has no training examples, so n_samples / "
                   "(n_classes * count) has no value (sklearn refuses it too); give the weights as a list");
}

TEST_F(BadInput, MisspeltSampler) {
  expect_bad_input(recipe("workers: 1", "workers: 1\n  sampler: weigthed"),
                   (dir / "recipe.yaml") + ":10:12: data.sampler: unknown value 'weigthed' (did you mean 'weighted'?); "
                                      "one of: random, weighted");
}

// train.activation_checkpointing names the model's stages (`describe` lists the resnets'); a
// model without stages takes only false.
TEST_F(BadInput, ActivationCheckpointingStage) {
  expect_bad_input(recipe() + " model.name=resnet18 'train.activation_checkpointing=[layer1, layr3]'",
                   "train.activation_checkpointing: 'layr3' is not a stage of resnet18 (did you mean 'layer3'?); "
                   "its stages: layer1, layer2, layer3, layer4");
  expect_bad_input(recipe() + " train.activation_checkpointing=true",
                   "train.activation_checkpointing: basicnet has no stages to checkpoint; use false");
  expect_bad_input(recipe("log_every_steps: 2}", "log_every_steps: 2, activation_checkpointing: yes}"),
                   (dir / "recipe.yaml") + ":11:77: train.activation_checkpointing: expected a list or 'true' or 'false', got 'yes'");
}

// The recipe argument itself: missing, a folder, unreadable.
TEST_F(BadInput, RecipeFileThatCannotBeRead) {
  fs::create_directories(dir / "folder.yaml");
  for (const std::string command : {"check ", ""}) {
    expect_err(test::run(test::trainrun(command + (dir / "none.yaml"))), 2, (dir / "none.yaml") + ": no such recipe file\n");
    expect_err(test::run(test::trainrun(command + (dir / "folder.yaml"))), 2,
               (dir / "folder.yaml") + ": is a folder, not a recipe file\n");
  }
  if (::geteuid() != 0) {  // root reads a file whatever its mode (so the page's row does not list this line)
    std::string file = recipe();
    fs::permissions(file, fs::perms::none);
    auto r = test::run(test::trainrun("check " + file));
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, file + ": cannot read the recipe: Permission denied\n");
  }
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// `base:` (recipe inheritance) naming a file that is not there: the line of the entry.
TEST_F(BadInput, MissingBaseRecipe) {
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: common.yaml\n"),
                   (dir / "recipe.yaml") + ":2:7: base: " + (dir / "common.yaml") + ": no such recipe file");
}

// Bases that lead back to a recipe already being read: the chain, at the entry that closes it.
TEST_F(BadInput, BaseRecipeCycle) {
  test::write_file(dir / "common.yaml", "base: recipe.yaml\nseed: 1\n");
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: common.yaml\n"),
                   (dir / "common.yaml") + ":1:7: base: a cycle: " + (dir / "recipe.yaml") + " -> " + (dir / "common.yaml") +
                       " -> " + (dir / "recipe.yaml"));
}

TEST_F(BadInput, BaseThatIsNotAFileName) {
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: {file: common.yaml}\n"),
                   (dir / "recipe.yaml") + ":2:7: base: expected a recipe file or a list of recipe files, got a mapping");
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: [common.yaml, [other.yaml]]\n"),
                   (dir / "recipe.yaml") + ":2:21: base[1]: expected a recipe file, got a list");
}

// A key misspelt in a base is reported at the base's line, whichever recipe builds on it.
TEST_F(BadInput, MisspeltKeyInABaseRecipe) {
  std::string base = recipe("batch_size: 32", "batch_sise: 32");
  fs::rename(base, dir / "base.yaml");
  test::write_file(dir / "recipe.yaml", "base: base.yaml\noutput: {dir: " + (dir / "run") + "}\n");
  expect_bad_input(dir / "recipe.yaml", (dir / "base.yaml") + ":6:3: data.batch_sise: unknown key (did you mean 'batch_size'?)");
}

// The list of registered names ends the line; plugins may add to it.
TEST_F(BadInput, UnknownRegistryName) {
  std::string args = recipe("{name: basicnet}", "{name: resnet19}");
  for (const std::string command : {"check ", ""}) {
    auto r = test::run(test::trainrun(command + args));
    EXPECT_EQ(r.code, 2) << r.err;
    const std::string head = (dir / "recipe.yaml") + ":2:15: model.name: unknown model 'resnet19' (did you mean 'resnet18'?); one of: ";
    ASSERT_EQ(r.err.rfind(head, 0), 0u) << r.err;
    // Every registered model, sorted: the list is the registry's, not a copy.
    std::string listed = r.err.substr(head.size());
    listed.erase(listed.find_last_not_of('\n') + 1);
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= listed.size();) {
      std::size_t comma = listed.find(", ", at);
      names.push_back(listed.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      at = comma == std::string::npos ? listed.size() + 1 : comma + 2;
    }
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << listed;
    for (const char* name : {"basicnet", "resnet18", "resnet50d", "convnext_tiny", "vit_small_patch16_224", "efficientnet_b0"})
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " not in: " << listed;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    saw(head + "<every registered model, sorted>", r.code);
  }
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, MissingDatasetFolder) {
  // Named by its key and where it was written; `check` first reports what needs no data.
  expect_bad_input(recipe() + " data.dataset.root=" + (dir / "nowhere"),
                   "data.dataset.root (command line 'data.dataset.root=" + (dir / "nowhere") + "'): " + (dir / "nowhere") +
                       ": no such folder");
}

// output.resume: auto in a run folder that holds another job's checkpoint (runner/recipe/resume_plan.h):
// refused before anything is written, naming the keys that differ. (`check` says the same in its
// `run folder:` line and exits 0: a recipe is often checked away from the machine that runs it.)
TEST_F(BadInput, RunFolderOfAnotherJob) {
  auto first = test::run(test::trainrun(recipe()));
  ASSERT_EQ(first.code, 0) << first.err;
  const auto before = test::snapshot(dir / "run");
  auto r = test::run(test::trainrun(recipe() + " optimizer.lr=3e-4 seed=7"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, (dir / "run") + " holds another run: seed 42 -> 7, optimizer.lr 0.001 -> 0.0003; use output.dir=..., or "
                                   "output.resume=never to start over in it\n");
  EXPECT_EQ(test::snapshot(dir / "run"), before);
  saw(r.err, r.code);
}

TEST_F(BadInput, EmptyDatasetFolder) {
  fs::create_directories(dir / "empty");
  expect_bad_input(recipe() + " data.dataset.root=" + (dir / "empty"),
                   (dir / "empty") + "/train-images-idx3-ubyte[.gz]: no such file (an MNIST folder holds "
                                     "train-images-idx3-ubyte and its three siblings)");
  expect_bad_input(recipe() + " 'data.dataset={name: image_folder, root: " + (dir / "empty") + "}'",
                   (dir / "empty") + ": no class sub-folders (image_folder expects root/CLASS/IMAGE)");
}

TEST_F(BadInput, NoFileMatchesTheRegex) {
  fs::create_directories(dir / "pets");
  for (int i = 0; i < 3; ++i) write_image(dir / ("pets/cat-" + std::to_string(i) + ".jpg"), torch::zeros({28, 28, 3}, torch::kUInt8));
  expect_bad_input(recipe() + " 'data.dataset={name: pets_folder, root: " + (dir / "pets") + "}'",
                   (dir / "pets") + ": no file matches label_regex '^(.*)_\\d+\\.jpg$' (3 files looked at)");
}

TEST_F(BadInput, TruncatedIdx) {
  test::write_black_mnist(dir / "idx", 10, -1);
  fs::resize_file(dir / "idx/train-images-idx3-ubyte", 16 + 7000);
  expect_bad_input(recipe() + " data.dataset.root=" + (dir / "idx") + " data.dataset.classes=null",
                   (dir / "idx/train-images-idx3-ubyte") +
                       ": truncated: header promises 10 x 28 x 28 = 7840 bytes of data, found 7000");
}

TEST_F(BadInput, TruncatedStl10) {
  const int64_t image = 96 * 96 * 3;
  for (std::string split : {"train", "test"}) {
    test::write_file(dir / ("stl/" + split + "_X.bin"), std::string(std::size_t(2 * image), '\x80'));
    test::write_file(dir / ("stl/" + split + "_y.bin"), "\x01\x02");
  }
  fs::resize_file(dir / "stl/train_X.bin", 2 * image - 100);
  expect_bad_input(recipe() + " 'data.dataset={name: stl10, root: " + (dir / "stl") + "}'",
                   (dir / "stl/train_X.bin") + ": " + std::to_string(2 * image - 100) +
                       " bytes is not a whole number of 96x96x3 images (27648 bytes each)");
}

TEST_F(BadInput, CorruptImageSkipped) {
  auto r = test::run(test::trainrun(corrupt_pets_recipe()));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, "skipped an unreadable example (1 so far): " + corrupt_line())) << r.out;  // rank 0's console
  saw("skipped an unreadable example (1 so far): " + corrupt_line(), r.code);
  EXPECT_TRUE(fs::exists(dir / "run/model.safetensors"));
}

TEST_F(BadInput, CorruptImageFatal) {
  auto r = test::run(test::trainrun(corrupt_pets_recipe() + " data.on_bad_file=error"));
  expect_err(r, 1, "rank 0: " + corrupt_line() + "\n");
  EXPECT_TRUE(fs::exists(dir / "run/labels.json"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

// WebDataset shards (tests/py/wds_fixture.py: 4 training shards of 40 samples, sizes.json,
// classes.txt), `--no-label I` leaving out sample I's label; the recipe's dataset replaced by them.
std::string shards_recipe(const BadInput& t, const test::TempDir& dir, const std::string& fixture_args = "") {
  auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/wds_fixture.py") + " " + (dir / "shards") +
                     " 160 40 40 " + fixture_args);
  EXPECT_EQ(r.code, 0) << r.err;
  return " 'data.dataset={name: webdataset, urls: \"" + (dir / "shards") + "/train-{000000..000003}.tar\", eval_urls: " +
         (dir / "shards") + "/val-000000.tar}' 'data.train_transforms=[{resize: {size: [28, 28]}}, {grayscale: {}}, "
         "to_tensor]' 'data.eval_transforms=[{resize: {size: [28, 28]}}, {grayscale: {}}, to_tensor]' "
         "train.loss=cross_entropy";
}

TEST_F(BadInput, ShardPatternWithNoMatch) {
  std::string args = recipe() + shards_recipe(*this, dir);
  std::string wrong = dir / "shard";  // a typo for shards/
  auto at = args.find((dir / "shards") + "/train-");
  args.replace(at, (dir / "shards").size(), wrong);
  expect_bad_input(args, "data.dataset.urls: no shard matches: none of the 4 files exists (the first: " + wrong +
                             "/train-000000.tar)");
}

TEST_F(BadInput, NumSamplesLargerThanTheShards) {
  expect_bad_input(recipe() + shards_recipe(*this, dir) + " data.dataset.num_samples=1000",
                   "data.dataset.num_samples: 1000 is more than the 160 samples in the 4 shards (their sizes.json "
                   "says); an epoch would repeat samples");
}

TEST_F(BadInput, ShardThatIsNotATar) {
  const std::string args = recipe() + shards_recipe(*this, dir);
  test::write_file(dir / "shards/train-000002.tar", "<html>not found</html>\n");
  auto r = test::run(test::trainrun("check " + args));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  const std::string line = "    cannot open: " + (dir / "shards/train-000002.tar") +
                           ": not a tar archive (libarchive: Unrecognized archive format)";
  EXPECT_TRUE(has_line(r.out, line)) << r.out;
  EXPECT_NE(r.out.find("3 of 4 open"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "check: 1 shard cannot be opened (listed above)\n");
  saw(line.substr(4) + "\n" + r.err, r.code);
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, TruncatedShard) {
  const std::string args = recipe() + shards_recipe(*this, dir);
  // Cut inside the header of the shard's 12th member (000045.cls), wherever the PNGs this
  // Pillow writes put it (GNU tar's --block-number says where).
  auto blocks = test::run("tar -tRf " + (dir / "shards/train-000001.tar"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(blocks.out, m, std::regex("block (\\d+): 000045\\.cls"))) << blocks.out;
  fs::resize_file(dir / "shards/train-000001.tar", std::stoull(m[1]) * 512 + 100);
  const std::string why = (dir / "shards/train-000001.tar") +
                          ": truncated tar archive after member '000045.png' (libarchive: Truncated tar archive)";
  auto skipped = test::run(test::trainrun(args));
  EXPECT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_TRUE(has_line(skipped.out, "skipped the rest of a shard: " + why)) << skipped.out;
  saw("skipped the rest of a shard: " + why, 0);
  EXPECT_TRUE(fs::exists(dir / "run/model.safetensors"));
  fs::remove_all(dir / "run");
  auto stopped = test::run(test::trainrun(args + " data.on_bad_file=error"));
  expect_err(stopped, 1, "rank 0: " + why + "\n");
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

TEST_F(BadInput, ShardSampleWithoutALabel) {
  auto r = test::run(test::trainrun(recipe() + shards_recipe(*this, dir, "--no-label 3") + " data.on_bad_file=error"));
  expect_err(r, 1, "rank 0: " + (dir / "shards/train-000000.tar") +
                       ": sample '000003': no label (a cls or label field, or a json field's \"label\"); its fields: png\n");
  EXPECT_TRUE(fs::exists(dir / "run/labels.json"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

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

TEST_F(BadInput, BusyPort) {
  LoopbackPort busy(/*listen=*/true);
  auto r = test::run(test::trainrun(recipe() + " world.nproc_per_node=2 world.master_port=" + std::to_string(busy.port())));
  shown_as("port " + std::to_string(busy.port()), "port <port>");
  expect_err(r, 2, "world.master_port: port " + std::to_string(busy.port()) +
                       " on 127.0.0.1 is not free (Address already in use); pick another, or 0 for any free port\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Node 1 of 2 whose master (node 0) never comes up: refused until world.timeout_s, then rank 1
// says where it looked and the launcher which rank failed.
TEST_F(BadInput, UnreachableMaster) {
  LoopbackPort nobody(/*listen=*/false);
  const std::string at = "127.0.0.1:" + std::to_string(nobody.port());
  auto r = test::run(test::trainrun(recipe() + " world.nnodes=2 world.node_rank=1 world.timeout_s=2 world.master_port=" +
                                    std::to_string(nobody.port())));
  shown_as(at, "127.0.0.1:<port>");
  expect_err(r, 1, "rank 1: cannot reach the rendezvous at " + at + " within 2 s: no connection accepted\n"
                   "trainrun: rank 1 exited with code 1\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Node 1 of 2 whose master port belongs to a program that accepts connections and never answers
// (the TCPStore client's handshake has no time limit of its own): rank 1 still gives up at
// world.timeout_s, with the same line as an unreachable master, while the listener stays open.
// "At world.timeout_s" is measured against the unreachable master's run, which has the same
// deadline and the same two process starts (several seconds each under ASan on a slow VM).
TEST_F(BadInput, SilentMaster) {
  auto timed = [&](int port) {
    const auto start = std::chrono::steady_clock::now();
    auto r = test::run(test::trainrun(recipe() + " world.nnodes=2 world.node_rank=1 world.timeout_s=2 world.master_port=" +
                                      std::to_string(port)));
    return std::make_pair(r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  LoopbackPort nobody(/*listen=*/false);
  const auto [refused, unreachable_s] = timed(nobody.port());
  ASSERT_EQ(refused.code, 1) << refused.err;
  LoopbackPort silent(/*listen=*/true);
  const std::string at = "127.0.0.1:" + std::to_string(silent.port());
  const auto [r, seconds] = timed(silent.port());
  shown_as(at, "127.0.0.1:<port>");
  expect_err(r, 1, "rank 1: cannot reach the rendezvous at " + at +
                       " within 2 s: something accepts connections there but does not answer as a c10d store\n"
                       "trainrun: rank 1 exited with code 1\n");
  EXPECT_LT(seconds, unreachable_s + 3) << "world.timeout_s=2 did not bound the wait (an unreachable master: "
                                        << unreachable_s << " s)";
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, BadLauncherVariables) {
  expect_err(test::run("RANK=x WORLD_SIZE=2 " + test::trainrun(recipe())), 2,
             "RANK=x: expected a whole number >= 0 (set by the launcher that started trainrun, or by hand)\n");
  expect_err(test::run("RANK=2 WORLD_SIZE=2 " + test::trainrun(recipe())), 2,
             "rank 2 is outside a world of 2 (check RANK / WORLD_SIZE)\n");
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST_F(BadInput, MoreProcessesThanExamples) {
  expect_bad_input(recipe() + " world.nproc_per_node=2 data.max_train_samples=1",
                   "world: 2 processes for 1 training examples; every process needs at least one (fewer processes, or "
                   "more data)");
}

TEST_F(BadInput, Fp16OnCpu) {
  expect_bad_input(recipe() + " precision=fp16",
                   "precision: fp16 needs a CUDA device (this run is on cpu); use bf16 or fp32 on CPU, or precision: auto");
}

// The example whose white pixel makes the loss nan is the 21st the shuffled epoch meets
// (DistributedSampler's torch.randperm(256) seeded with seed + epoch), so in the 3rd batch of 8.
TEST_F(BadInput, NanLoss) {
  auto generator = at::detail::createCPUGenerator(42);
  test::write_black_mnist(dir / "black", 256, int(torch::randperm(256, generator, torch::kLong)[20].item<int64_t>()));
  auto r = test::run(test::trainrun(recipe() + " data.dataset.root=" + (dir / "black") +
                                    " data.dataset.classes=null data.batch_size=8 output.save_every=1"
                                    " 'data.train_transforms=[to_tensor, {normalize: {mean: [0], std: [1e-39]}}]'"));
  expect_err(r, 1, "rank 0: step 3: loss is nan on rank 0; every rank stopped before the optimizer step (lower the "
                   "learning rate or check the data); checkpoints saved before it are kept\n");
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-2/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "run/checkpoint-3"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

// A read-only mount (root passes every permission check, not this one); the folder is left as it
// was. Found before anything starts, so exit 2.
TEST_F(BadInput, ReadOnlyOutputFolder) {
  fs::create_directories(dir / "ro/earlier");
  test::write_file(dir / "ro/earlier/labels.json", "{}\n");
  auto m = test::run("mount --bind -o ro " + (dir / "ro") + " " + (dir / "ro"));
  if (m.code != 0) GTEST_SKIP() << "cannot make a read-only bind mount here (needs root): " << m.err;
  auto before = contents(dir / "ro");
  auto r = test::run(test::trainrun(recipe() + " output.dir=" + (dir / "ro/run")));
  auto resumed = test::run(test::trainrun(recipe() + " output.dir=" + (dir / "ro/earlier")));
  auto after = contents(dir / "ro");
  test::run("umount " + (dir / "ro"));
  expect_err(r, 2, "output.dir: " + (dir / "ro/run") + ": cannot create it in " + (dir / "ro") + ": Read-only file system\n");
  expect_err(resumed, 2, "output.dir: " + (dir / "ro/earlier") + ": cannot write in it: Read-only file system\n");
  EXPECT_EQ(after, before);
}

// A 20 MB tmpfs holds one BasicNet checkpoint (weights 4.8 MB + AdamW state 9.6 MB), not two.
TEST_F(BadInput, FullOutputFolder) {
  fs::create_directories(dir / "small");
  auto m = test::run("mount -t tmpfs -o size=20m tmpfs " + (dir / "small"));
  if (m.code != 0) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << m.err;
  auto r = test::run(test::trainrun(recipe() + " output.save_every=2 train.eval_every=never output.dir=" + (dir / "small/run")));
  bool kept = fs::exists(dir / "small/run/checkpoint-2/trainer_state.json");
  bool partial = fs::exists(dir / "small/run/checkpoint-4") || fs::exists(dir / "small/run/.checkpoint-4.tmp");
  test::run("umount " + (dir / "small"));
  expect_err(r, 1, "rank 0: cannot save " + (dir / "small/run/checkpoint-4") + ": " + (dir / "small/run/.checkpoint-4.tmp") +
                       "/optimizer.pt: write failed: No space left on device (older checkpoints are kept)\n");
  EXPECT_TRUE(kept);
  EXPECT_FALSE(partial);
}

TEST_F(BadInput, Sigint) {
  expect_stopped_with_checkpoint("INT", "Interrupt", 130, "trainrun: interrupted; workers stopped");
}

TEST_F(BadInput, Sigterm) {
  expect_stopped_with_checkpoint("TERM", "Interrupt", 130, "trainrun: interrupted; workers stopped");
}

TEST_F(BadInput, Sigusr1) {
  expect_stopped_with_checkpoint("USR1", "User defined signal 1", 138,
                                 "trainrun: pre-empted (SIGUSR1); workers stopped after a checkpoint, exit 138 (requeue "
                                 "the job to resume)");
}

TEST_F(BadInput, KilledRank) {
  auto r = long_run_and("for p in $(pgrep -P $L); do grep -qx trainrun-rank1 /proc/$p/comm && kill -9 $p; done");
  std::string err = test::read_file(dir / "err");
  EXPECT_EQ(r.out, "rc=1\n") << err;
  EXPECT_EQ(last_line(err), "trainrun: rank 1 was killed by signal 9 (Killed)") << err;
  // Rank 0 hears of it from gloo (a closed or reset connection), in one line without the place
  // in gloo's sources.
  EXPECT_TRUE(std::regex_search(err, std::regex("(^|\n)rank 0: lost contact with another rank \\(gloo: [^\n]*127\\.0\\.0\\.1[^\n]*\\)\n")))
      << err;
  EXPECT_EQ(test::count_lines(err), 2) << err;
  saw("rank 0: lost contact with another rank (gloo: <gloo's message, naming 127.0.0.1>)\n" + last_line(err), 1);
  EXPECT_TRUE(fs::exists(dir / "run/labels.json"));
  EXPECT_FALSE(fs::exists(dir / "run/model.safetensors"));
}

// `predict` reads the class names from the run's labels.json; one that is not a run's is named.
// Resuming (output.resume: auto) under a recipe whose optimizer cannot take the checkpoint's state:
// exit 2 before anything starts, the run folder as it was. LibTorch itself fails on it only once
// the run started (exit 1), with "is_tensor_type INTERNAL ASSERT FAILED ... please report a bug to
// PyTorch" for another optimizer. A compatible change (adamw -> adam) still resumes.
TEST_F(BadInput, ResumeWithAnotherOptimizer) {
  ASSERT_EQ(test::run(test::trainrun(recipe() + " train.eval_every=never")).code, 0);
  auto before = contents(dir / "run");
  const std::string saved = (dir / "run/checkpoint-8/optimizer.pt");
  const std::string tail = "it was saved with another optimizer, other no_decay groups or other freeze rules; "
                           "output.resume: never, or another output.dir, starts afresh";
  // Named as a PATH: output.resume: auto refuses another job's folder before this (RunFolderOfAnotherJob).
  const std::string from = " output.resume=" + (dir / "run/checkpoint-8");
  for (const std::string command : {"check ", ""}) {
    auto sgd = test::run(test::trainrun(command + recipe() + from + " train.epochs=2 optimizer.name=sgd"));
    expect_err(sgd, 2, "output.resume: " + saved + " does not fit optimizer sgd over 8 trainable tensors (its state is " +
                           "another optimizer's): " + tail + "\n");
    auto frozen = test::run(test::trainrun(command + recipe() + from + " train.epochs=2 'freeze=[{params: fc2.*, trainable: false}]'"));
    expect_err(frozen, 2, "output.resume: " + saved + " does not fit optimizer adamw over 6 trainable tensors (loaded state " +
                              "dict contains a parameter group that has a different size than the optimizer's parameter group): " +
                              tail + "\n");
  }
  EXPECT_EQ(contents(dir / "run"), before);
  auto adam = test::run(test::trainrun(recipe() + from + " train.epochs=2 train.eval_every=never optimizer.name=adam"));
  EXPECT_EQ(adam.code, 0) << adam.err;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-16"));
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

// A dataset of one class (an image_folder with one sub-folder, a pets_folder whose label_regex
// finds one breed): a 1-output model reaches eval_accuracy 1.0 learning nothing.
TEST_F(BadInput, OneClassDataset) {
  fs::create_directories(dir / "photos/cats");
  fs::create_directories(dir / "pets");
  for (int i = 1; i <= 4; ++i) {
    write_image(dir / ("photos/cats/" + std::to_string(i) + ".png"), torch::full({28, 28, 3}, i * 40, torch::kUInt8));
    write_image(dir / ("pets/beagle_" + std::to_string(i) + ".jpg"), torch::full({28, 28, 3}, i * 40, torch::kUInt8));
  }
  const std::string mnist = "{name: mnist, root: /usr/share/datasets/fashion-mnist}";
  expect_bad_input(recipe(mnist, "{name: image_folder, root: " + (dir / "photos") + ", channels: 1}"),
                   "data.dataset.root (" + (dir / "recipe.yaml") + ":4:39): found 1 class in " + (dir / "photos") +
                       " ('cats'); a classifier needs at least 2");
  expect_bad_input(recipe(mnist, "{name: pets_folder, root: " + (dir / "pets") + ", channels: 1}"),
                   "data.dataset.root (" + (dir / "recipe.yaml") + ":4:38): found 1 class in " + (dir / "pets") +
                       " ('beagle'); a classifier needs at least 2");
}

// timm's and the Trainer's habit (`--epochs 3`): a recipe key given as an option names its
// override; an option named like no key (not even nearly: that would be a guess) is CLI11's error.
TEST_F(BadInput, RecipeKeyGivenAsAnOption) {
  expect_bad_input(recipe() + " --epochs 3", "--epochs: not an option; recipe keys are overrides: use train.epochs=3");
  expect_bad_input(recipe() + " --batch-size=64", "--batch-size: not an option; recipe keys are overrides: use data.batch_size=64");
  expect_bad_input(recipe() + " --seed 7", "--seed: not an option; recipe keys are overrides: use seed=7");
  for (const std::string option : {"--verbose", "--epoch"}) {
    auto r = test::run(test::trainrun(recipe() + " " + option + " 3"));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err, "The following argument was not expected: " + option + "\nRun with --help for more information.\n");
  }
}

// A key without its section is found by its last part across the sections.
TEST_F(BadInput, KeyWithoutItsSection) {
  expect_bad_input(recipe() + " epochs=2", "command line 'epochs=2': epochs: unknown key (did you mean 'train.epochs'?)");
  expect_bad_input(recipe() + " lr=3e-4", "command line 'lr=3e-4': lr: unknown key (did you mean 'optimizer.lr'?)");
}

TEST_F(BadInput, OverrideBeforeTheRecipe) {
  expect_bad_input("train.epochs=1 " + recipe(), "train.epochs=1: the recipe file comes first: trainrun RECIPE.yaml [key=value ...]");
}

// The paths errors and `check --origin` print are overrides too (an index into a list, then keys;
// `normalize` written by name alone is opened); an index past the list's end names the override.
TEST_F(BadInput, OverrideOfAListItem) {
  auto r = test::run(test::trainrun("check " + recipe() + " 'data.train_transforms[1].normalize.mean=[0.5]' --origin"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\ndata\.train_transforms\[1\]\.normalize\.mean: \[0\.5\] +# command line )"
                                                  R"('data\.train_transforms\[1\]\.normalize\.mean=\[0\.5\]'\n)")))
      << r.out;
  expect_bad_input(recipe() + " 'data.train_transforms[2].normalize.mean=[0.5]'",
                   "command line 'data.train_transforms[2].normalize.mean=[0.5]': data.train_transforms[2]: no such item; "
                   "data.train_transforms has 2 (0 to 1)");
}

// A tab in the indentation, or an indentation no block above has: said so, where yaml-cpp says
// "end of map not found".
TEST_F(BadInput, YamlTabOrIndentation) {
  expect_bad_input(recipe("  batch_size: 32", "\tbatch_size: 32"),
                   (dir / "recipe.yaml") + ":6:1: YAML syntax error: a tab in the indentation; YAML indents with spaces only");
  expect_bad_input(recipe("  batch_size: 32", "   batch_size: 32"),
                   (dir / "recipe.yaml") + ":6:4: YAML syntax error: bad indentation: 3 spaces, where the lines above are indented 0 or 2");
}

// Early stopping by an EMA metric needs train.ema (with it, tests/train/ema_test.cpp runs one).
TEST_F(BadInput, EarlyStoppingOnAnEmaMetricWithoutEma) {
  expect_bad_input(recipe() + " 'callbacks=[{name: early_stopping, metric: ema_accuracy}]'",
                   "callbacks[0].metric: eval_ema_accuracy is an EMA metric, but train.ema is null");
  expect_bad_input(recipe() + " 'train.ema={decay: 0.9}' 'callbacks=[{name: early_stopping, metric: eval_ema_top5}]'",
                   "callbacks[0].metric: eval_ema_top5 is not evaluated: train.metrics has no top5");
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

// Every BadInput test has its row in the page, and every row names a test of this file: a new row
// cannot be added without the test that writes its lines, nor a test without its row.
TEST(BadInputPage, RowsAndTestsAreTheSame) {
  std::set<std::string> tests, rows;
  auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i) {
    auto* suite = unit->GetTestSuite(i);
    if (std::string(suite->name()) != "BadInput") continue;
    for (int j = 0; j < suite->total_test_count(); ++j) tests.insert(std::string("BadInput.") + suite->GetTestInfo(j)->name());
  }
  const std::regex named("`(BadInput\\.[A-Za-z0-9]+)`");
  for (const auto& line : test::page_lines(test::source(kPage))) {
    if (line.rfind("| ", 0) != 0) continue;
    const auto c = test::table_cells(line);
    if (c.empty()) continue;
    for (std::sregex_iterator it(c.back().begin(), c.back().end(), named), end; it != end; ++it) rows.insert((*it)[1]);
  }
  EXPECT_GE(tests.size(), 50u);
  EXPECT_EQ(rows, tests);
}

}  // namespace
}  // namespace trainrun
