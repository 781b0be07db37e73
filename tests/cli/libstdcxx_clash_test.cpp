// pytorch/pytorch#133437 on Debian's LibTorch: pip torch wheels and the LibTorch archives link
// parts of libstdc++ into libtorch_cpu.so and export them (check_binary_symbols.py in PyTorch's
// smoke tests looks for `recursive_directory_iterator`; torch 2.11.0+cu130 exports 156 libstdc++
// functions, 142 of them std::filesystem: tests/data/libtorch_cpu_libstdcxx_exports.txt). A
// program that lists libtorch_cpu.so ahead of libstdc++.so.6 binds its own calls to those copies;
// trainrun died in remove_all at the first checkpoint rotation (on an H100 with that wheel:
// SIGSEGV saving checkpoint-4 with keep_last 1). This test builds a stand-in for such a
// libtorch_cpu.so: a library that exports a poisoned copy (it prints its name and aborts) of every
// function of that list, and of every std::filesystem function, that trainrun, libtrainrun or a
// plugin imports, and loads the real libtorch_cpu behind it; it takes libtorch_cpu's place in a
// copy of the trainrun binary (patchelf --replace-needed), as the wheel sits there. Under it the things that touch files must still work: downloads into the Hub
// cache and the dataset folder, the run folder, checkpoint rotation, checkpoint-best, resume,
// export and a plugin. The fix (CMakeLists.txt: libstdc++ first in DT_NEEDED) is what passes it.
#include "components/data/image.h"
#include "components/models/model.h"
#include "registry/registry.h"
#include "runner/io/weights.h"
#include "support/download.h"
#include "support/hub_server.h"
#include "test_util.h"

#include <torch/torch.h>

#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

// std::filesystem::remove_all(const path&, std::error_code&): where trainrun crashed.
constexpr const char* kRemoveAll = "_ZNSt10filesystem10remove_allERKNS_7__cxx114pathERSt10error_code";

std::set<std::string> line_set(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string s; std::getline(in, s);)
    if (!s.empty() && s[0] != '#') out.insert(s);
  return out;
}

// The functions `file` imports (nm's mangled names without their @version).
std::set<std::string> imported_symbols(const std::string& file) {
  return line_set(test::run("nm -D --undefined-only " + file + " | awk '{print $2}' | sed 's/@.*//'").out);
}

bool is_filesystem(const std::string& symbol) {
  return symbol.rfind("_ZNSt10filesystem", 0) == 0 || symbol.rfind("_ZNKSt10filesystem", 0) == 0;
}

// The library `needed` names libtorch_cpu by, as the binary's DT_NEEDED spells it.
std::string needed_entry(const std::string& binary, const std::string& prefix) {
  auto r = test::run("readelf -d " + binary + " | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p'");
  std::istringstream in(r.out);
  for (std::string s; std::getline(in, s);)
    if (s.rfind(prefix, 0) == 0) return s;
  return "";
}

std::string library_path(const std::string& binary, const std::string& soname) {
  return test::run("ldd " + binary + " | awk '$1 == \"" + soname + "\" {printf \"%s\", $3}'").out;
}

class LibstdcxxClash : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(test::run("command -v patchelf").code, 0) << "patchelf is missing (scripts/setup.sh --test installs it)";
    const std::string binary = TRAINRUN_BINARY;
    const std::string core = library_path(binary, needed_entry(binary, "libtrainrun.so"));
    torch_cpu = needed_entry(binary, "libtorch_cpu.so");
    ASSERT_FALSE(torch_cpu.empty()) << binary << " does not name libtorch_cpu.so: the test's premise";
    ASSERT_FALSE(core.empty());
    const auto wheel = line_set(test::read_file(test::source("tests/data/libtorch_cpu_libstdcxx_exports.txt")));
    ASSERT_EQ(wheel.size(), 156u);
    for (const std::string& file : {binary, core, std::string(CSV_LOGGER_PLUGIN)})
      for (const auto& s : imported_symbols(file))
        if (is_filesystem(s) || wheel.count(s)) symbols.insert(s);
    ASSERT_GT(symbols.size(), 20u) << "functions imported: too few to be the real list";
    ASSERT_TRUE(symbols.count(kRemoveAll)) << "remove_all, the one that crashed";

    std::string c = "#include <stdio.h>\n#include <stdlib.h>\n"
                    "static void poisoned(const char* name) {\n"
                    "  fprintf(stderr, \"poisoned libstdc++ copy called: %s\\n\", name);\n  abort();\n}\n";
    int i = 0;
    for (const auto& s : symbols) {
      const std::string f = "p" + std::to_string(i++);
      c += "void " + f + "(void) __asm__(\"" + s + "\");\nvoid " + f + "(void) { poisoned(\"" + s + "\"); }\n";
    }
    test::write_file(dir / "poison.c", c);
    // Named as libtorch_cpu's stand-in; the real one loads behind it (the wheel's own code).
    poison = dir / "libtorch_cpu_poisoned.so";
    auto built = test::run("gcc -shared -fPIC -o " + poison + " " + (dir / "poison.c") + " -Wl,--no-as-needed " +
                           library_path(binary, torch_cpu));
    ASSERT_EQ(built.code, 0) << built.err;
    trainrun = dir / "trainrun";
    fs::copy_file(binary, trainrun);
    auto patched = test::run("patchelf --replace-needed " + torch_cpu + " " + poison + " " + trainrun);
    ASSERT_EQ(patched.code, 0) << patched.err;
    ASSERT_EQ(needed_entry(trainrun, poison), poison);
  }

  // What the pets recipe's downloads need: images.tar.gz on a mirror, basicnet weights on a Hub.
  void serve() {
    fs::create_directories(dir / "src/images");
    torch::manual_seed(3);
    for (int i = 1; i <= 12; ++i) {
      write_image(dir / ("src/images/Abyssinian_" + std::to_string(i) + ".jpg"), torch::randint(0, 120, {28, 28, 3}, torch::kUInt8));
      write_image(dir / ("src/images/beagle_" + std::to_string(i) + ".jpg"), torch::randint(100, 256, {28, 28, 3}, torch::kUInt8));
    }
    fs::create_directories(dir / "mirror");
    ASSERT_EQ(test::run("tar -C " + (dir / "src") + " -czf " + (dir / "mirror/images.tar.gz") + " images").code, 0);
    const auto& entry = Registry<Classifier>::instance().get("basicnet");
    YAML::Node cfg;
    for (auto& p : entry.schema.params()) cfg[p.name] = p.name == "num_classes" ? YAML::Node(10) : YAML::Clone(p.default_value);
    auto model = entry.make(Config(cfg, "model"));
    save_safetensors(dir / "weights.safetensors", state_dict(*model));
    nlohmann::json files = {{"model.safetensors", {{"path", dir / "weights.safetensors"}}}};
    nlohmann::json main = {{"commit", "0123456789abcdef0123456789abcdef01234567"}, {"files", files}};
    server.emplace(nlohmann::json{{"repos", {{"test/net", {{"revisions", {{"main", main}}}}}}}, {"files_dir", dir / "mirror"}},
                   dir.path());
    ASSERT_GT(server->port(), 0);
  }

  // The patched binary, run from dir/work with the Hub and mirror of serve().
  test::RunResult run(const std::string& args) {
    return test::run("cd " + (dir / "work") + " && env -u HF_HUB_CACHE -u HF_HUB_OFFLINE HF_HOME=" + (dir / "hf") +
                     " HF_ENDPOINT=" + server->url() + " TRAINRUN_DATASETS_MIRROR=" + server->url("/files") +
                     " TRAINRUN_DATASETS_MD5=images.tar.gz=" + file_md5(dir / "mirror/images.tar.gz") + " " + trainrun +
                     " " + args);
  }

  test::TempDir dir;
  std::optional<test::HubServer> server;
  std::set<std::string> symbols;
  std::string torch_cpu, poison, trainrun;
};

// The stand-in does what the wheel did: a program that names it ahead of libstdc++ (as g++ orders
// a plain link) calls its copies (the first is torch's own start-up calling a std::string member;
// no further than that). Without this the test below could pass by testing nothing.
TEST_F(LibstdcxxClash, TheStandInCatchesAProgramLinkedTheOldWay) {
  test::write_file(dir / "old.cpp", "#include <filesystem>\nint main() {\n  std::error_code ec;\n"
                                    "  std::filesystem::remove_all(\"nothing-here\", ec);\n}\n");
  auto built = test::run("g++ -std=c++17 -o " + (dir / "old") + " " + (dir / "old.cpp") + " -Wl,--no-as-needed " + poison +
                         " -Wl,-rpath," + dir.path().string());
  ASSERT_EQ(built.code, 0) << built.err;
  auto r = test::run(dir / "old");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("poisoned libstdc++ copy called: _ZNSt"), std::string::npos) << r.err;
}

TEST_F(LibstdcxxClash, DownloadsCheckpointsResumeExportAndPluginsWork) {
  serve();
  fs::create_directories(dir / "work");
  test::write_file(dir / "work/recipe.yaml", R"(name: clash
seed: 1
plugins: [")" + std::string(CSV_LOGGER_PLUGIN) + R"("]
callbacks: [{name: csv_logger, file: metrics.csv}]
model: {name: basicnet, num_classes: auto, pretrained: "hf-hub:test/net"}
data:
  dataset: {name: pets_folder, root: data/pets/images, download: true, label_regex: '^(.*)_\d+\.jpg$', val_fraction: 0.25, channels: 1}
  train_transforms: [{resize: {size: [28, 28]}}, to_tensor, {normalize: {mean: model, std: model}}]
  eval_transforms: [{resize: {size: [28, 28]}}, to_tensor, {normalize: {mean: model, std: model}}]
  batch_size: 3
  workers: 1
optimizer: {name: adamw, lr: 1.0e-3}
scheduler: {name: constant}
train: {epochs: 2, loss: nll, log_every_steps: 1, eval_every: 2, metrics: [accuracy]}
output: {dir: runs/clash, save_every: 2, keep_last: 1, best_metric: eval_accuracy}
world: {nproc_per_node: 1, threads_per_proc: 1}
)");
  auto first = run("recipe.yaml");
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_EQ(first.err.find("poisoned"), std::string::npos) << first.err;
  const fs::path out = dir / "work/runs/clash";
  // 18 training images, batch 3: 6 steps an epoch, a checkpoint every 2: 6 written, 1 kept (+ best).
  auto checkpoints = [&] {
    std::vector<std::string> kept;
    for (auto& e : fs::directory_iterator(out))
      if (e.path().filename().string().rfind("checkpoint-", 0) == 0 && !fs::is_symlink(e.path()))
        kept.push_back(e.path().filename().string());
    return kept;
  };
  EXPECT_LE(checkpoints().size(), 2u) << ::testing::PrintToString(checkpoints());  // the last, and the best if older
  EXPECT_TRUE(fs::exists(out / "checkpoint-12/model.safetensors"));
  EXPECT_TRUE(fs::is_symlink(out / "checkpoint-best"));
  EXPECT_TRUE(fs::exists(out / "checkpoint-best/model.safetensors"));
  EXPECT_GE(test::count_lines(test::read_file(out / "metrics.csv")), 12);  // the plugin's file
  EXPECT_TRUE(fs::exists(dir / "work/data/pets/images/beagle_12.jpg"));   // the dataset download
  EXPECT_TRUE(fs::exists(dir / "hf/hub/models--test--net/refs/main"));     // the Hub download

  auto resumed = run("recipe.yaml train.epochs=3");
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("Resuming from"), std::string::npos) << resumed.out;
  EXPECT_TRUE(fs::exists(out / "checkpoint-18/model.safetensors"));
  // Rotated by the resumed run: 14 and 16 went; the best and the one it resumed from stay.
  EXPECT_FALSE(fs::exists(out / "checkpoint-14"));
  EXPECT_FALSE(fs::exists(out / "checkpoint-16"));
  EXPECT_TRUE(fs::exists(out / "checkpoint-12"));
  EXPECT_TRUE(fs::exists(out / "checkpoint-best/model.safetensors"));

  auto exported = run("export recipe.yaml --checkpoint runs/clash/checkpoint-best --format torchscript --output " +
                      (dir / "net.pt"));
  ASSERT_EQ(exported.code, 0) << exported.out << exported.err;
  EXPECT_GT(fs::file_size(dir / "net.pt"), 0u);
}

}  // namespace
}  // namespace trainrun
