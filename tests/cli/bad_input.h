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
//
// This header is the fixture; the rows' tests are in bad_input_*_test.cpp by theme: the recipe
// and the command line, the data, the weights and files a model reads, a run that fails once
// started; bad_input_page_test.cpp checks that the page and the tests name the same rows.
#pragma once

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

namespace trainrun::bad_input {

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
inline bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

inline std::string last_line(const std::string& text) {
  std::string s = text.substr(0, text.size() - (!text.empty() && text.back() == '\n'));
  return s.substr(s.rfind('\n') + 1);
}

// docs/reference/bad-inputs.md (its rows read with tests/support/markdown_table.h).
inline const std::string kPage = "docs/reference/bad-inputs.md";

// The index of the page's line whose last cell names `test` (`BadInput.Name`), or npos.
inline std::size_t row_of(const std::vector<std::string>& lines, const std::string& test) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("| ", 0) != 0) continue;
    auto c = test::table_cells(lines[i]);
    if (!c.empty() && c.back().find("`" + test + "`") != std::string::npos) return i;
  }
  return std::string::npos;
}

// A line as a Markdown code span (a line holding a backtick in double backticks).
inline std::string code_span(const std::string& line) {
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

  // A run folder as push reads it (kRecipe as recipe.resolved.yaml, a basicnet's
  // model.safetensors; no training: the rows are about the Hub) and a Hub stand-in
  // (hub_server.py's `config`, writes taking the token hf_write, which HF_TOKEN holds) at
  // HF_ENDPOINT: `push RUN --repo org/net`.
  std::string push_args(nlohmann::json config) {
    fs::create_directories(dir / "run");
    fs::copy_file(recipe(), dir / "run/recipe.resolved.yaml");
    fs::rename(weights("model.safetensors", [](TensorList&) {}), dir / "run/model.safetensors");
    config["token"] = "hf_write";
    hub_.emplace(config, dir.path());
    env_.set("HF_HOME", dir / "hf");
    env_.set("HF_ENDPOINT", hub_->url());
    shown_as(hub_->url(), "$HF_ENDPOINT");
    env_.set("HF_TOKEN", "hf_write");
    for (const char* name : {"HF_HUB_CACHE", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN"}) env_.set(name, std::nullopt);
    return "push " + (dir / "run") + " --repo org/net";
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
inline std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    out[e.path().string()] = e.is_regular_file() ? test::read_file(e.path().string()) : "(folder)";
  return out;
}

}  // namespace trainrun::bad_input
