// safetensors read/write and state_dict loading, against Python's reading of the same bytes.
#include "components/models/model.h"
#include "support/safetensors.h"
#include "runner/io/weights.h"

#include "test_util.h"

#include <torch/torch.h>

#include <map>

namespace trainrun {
namespace {

std::string error_of(const std::function<void()>& f) { return test::error_of<WeightsError>(f); }

std::shared_ptr<Classifier> basicnet(int64_t classes) {
  YAML::Node cfg = YAML::Load("{name: basicnet, in_channels: 1, dropout1: 0.25, dropout2: 0.5, pretrained: null}");
  cfg["num_classes"] = classes;
  return Registry<Classifier>::instance().get("basicnet").make(Config(cfg, "model"));
}

TEST(Safetensors, RoundTripsEveryDtype) {
  test::TempDir dir;
  TensorList in = {{"f32", torch::randn({3, 4})},
                   {"f16", torch::randn({5}).to(torch::kHalf)},
                   {"bf16", torch::randn({2, 2, 2}).to(torch::kBFloat16)},
                   {"i64", torch::arange(7)},
                   {"scalar", torch::tensor(3.5)},
                   {"empty", torch::empty({0, 3})}};
  save_safetensors(dir / "t.safetensors", in);
  TensorList out = load_safetensors(dir / "t.safetensors");
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.scalar_type(), in[i].second.scalar_type()) << in[i].first;
    EXPECT_TRUE(torch::equal(out[i].second, in[i].second)) << in[i].first;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "t.safetensors.tmp"));
}

TEST(Safetensors, PythonReadsWhatWeWriteAndWeReadWhatPythonWrites) {
  test::TempDir dir;
  save_safetensors(dir / "ours.safetensors", {{"w", torch::arange(6, torch::kFloat).view({2, 3})},
                                               {"h", torch::tensor({1.5, -2.0}).to(torch::kBFloat16)}});
  std::string py = std::string(test::kPython) + " -c 'import sys; sys.path.insert(0, \"" + test::source("tests/py") +
                   "\"); import st, torch; t = st.load_file(\"" + (dir / "ours.safetensors") +
                   "\"); assert t[\"w\"].tolist() == [[0, 1, 2], [3, 4, 5]], t; assert t[\"h\"].dtype == torch.bfloat16; "
                   "st.save_file({\"a\": torch.full((2, 2), 7.0, dtype=torch.float16), \"b\": torch.tensor([3])}, \"" +
                   (dir / "py.safetensors") + "\")'";
  auto r = test::run(py);
  ASSERT_EQ(r.code, 0) << r.err;
  TensorList read = load_safetensors(dir / "py.safetensors");
  ASSERT_EQ(read.size(), 2u);
  std::map<std::string, at::Tensor> t(read.begin(), read.end());  // the real save_file orders by dtype, then name
  EXPECT_EQ(t["a"].scalar_type(), torch::kHalf);
  EXPECT_TRUE(torch::equal(t["a"], torch::full({2, 2}, 7.0, torch::kHalf)));
  EXPECT_EQ(t["b"].item<int64_t>(), 3);
}

// What a run writes, read by Python's real safetensors (python3-safetensors, Debian 13): the final
// model.safetensors and every checkpoint's, with the metadata trainrun writes. Python re-saves what
// it read with the real save_file, as F32 and as F16/BF16 copies with metadata of its own, and
// trainrun reads those: the same tensors, bit for bit, as trainrun's own reading of its files (and
// torch's rounding to F16/BF16, which LibTorch shares).
TEST(Safetensors, RealSafetensorsReadsWhatARunWritesAndWritesWhatWeRead) {
  if (test::run(std::string(test::kPython) + " -c 'import safetensors.torch'").code != 0)
    GTEST_SKIP() << "python3-safetensors is not installed (Debian 12 does not package it; Debian 13 does)";
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  auto run = test::run(test::trainrun(test::source("recipes/quickstart.yaml") +
                                      " data.max_train_samples=256 data.max_eval_samples=64 train.epochs=2 "
                                      "world.nproc_per_node=1 output.dir=" + (dir / "run")));
  ASSERT_EQ(run.code, 0) << run.err;
  std::vector<std::string> files = {dir / "run/model.safetensors"};
  for (auto& e : std::filesystem::directory_iterator(dir / "run"))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0 && !e.is_symlink())
      files.push_back((e.path() / "model.safetensors").string());
  ASSERT_EQ(files.size(), 3u);  // the end and two epochs' checkpoints

  const std::string script = R"(
import sys, torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
for i, path in enumerate(sys.argv[1:]):
    with safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt"}, f.metadata()
        names = set(f.keys())
    t = load_file(path)
    assert set(t) == names and all(v.dtype == torch.float32 for v in t.values()), path
    base = path.rsplit("/", 2)[0] + "/py%d" % i
    save_file(t, base + "-f32.safetensors", metadata={"by": "python"})
    save_file({k: v.half() for k, v in t.items()}, base + "-f16.safetensors")
    save_file({k: v.bfloat16() for k, v in t.items()}, base + "-bf16.safetensors")
)";
  test::write_file(dir / "check.py", script);
  std::string args;
  for (auto& f : files) args += " " + f;
  auto py = test::run(std::string(test::kPython) + " " + (dir / "check.py") + args);
  ASSERT_EQ(py.code, 0) << py.err;
  for (std::size_t i = 0; i < files.size(); ++i) {
    TensorList ours = load_safetensors(files[i]);
    ASSERT_FALSE(ours.empty());
    const std::string base = (std::filesystem::path(files[i]).parent_path().parent_path() / ("py" + std::to_string(i))).string();
    for (auto [suffix, type] : {std::pair{"-f32", torch::kFloat}, {"-f16", torch::kHalf}, {"-bf16", torch::kBFloat16}}) {
      TensorList theirs = load_safetensors(base + suffix + ".safetensors");
      ASSERT_EQ(theirs.size(), ours.size()) << base << suffix;
      std::map<std::string, at::Tensor> by_name(theirs.begin(), theirs.end());  // Python writes names sorted
      for (auto& [name, t] : ours) {
        ASSERT_TRUE(by_name.count(name)) << name;
        at::Tensor want = t.to(type);
        EXPECT_EQ(by_name[name].scalar_type(), want.scalar_type()) << name << suffix;
        EXPECT_TRUE(torch::equal(by_name[name], want)) << name << suffix;
      }
    }
  }
}

TEST(Safetensors, BrokenFilesAreClearErrors) {
  test::TempDir dir;
  save_safetensors(dir / "ok.safetensors", {{"w", torch::ones({100})}});
  std::string bytes = test::read_file(dir / "ok.safetensors");
  test::write_file(dir / "cut.safetensors", bytes.substr(0, bytes.size() - 10));
  EXPECT_NE(error_of([&] { load_safetensors(dir / "cut.safetensors"); }).find("truncated: tensor 'w' ends at byte 400 of 390"),
            std::string::npos);
  std::string bad = bytes;
  bad[9] = '#';
  test::write_file(dir / "bad.safetensors", bad);
  EXPECT_NE(error_of([&] { load_safetensors(dir / "bad.safetensors"); }).find((dir / "bad.safetensors") + ": bad header"),
            std::string::npos);
  // Headers that lie about a tensor's size (found by fuzz/safetensors_fuzz.cpp: the reader used to
  // allocate what the header said before checking it against the file).
  auto with_header = [&](const std::string& name, const std::string& header) {
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i) len[std::size_t(i)] = char((header.size() >> (8 * i)) & 0xff);
    test::write_file(dir / name, len + header + std::string(16, '\0'));
    return error_of([&] { load_safetensors(dir / name); });
  };
  EXPECT_EQ(with_header("huge.safetensors", R"({"w":{"dtype":"F32","shape":[4000000000,4000000000],"data_offsets":[0,16]}})"),
            (dir / "huge.safetensors") + ": tensor 'w': data_offsets do not match its shape and dtype");
  EXPECT_EQ(with_header("big.safetensors", R"({"w":{"dtype":"F32","shape":[1000000000],"data_offsets":[0,4000000000]}})"),
            (dir / "big.safetensors") + ": truncated: tensor 'w' ends at byte 4000000000 of 16");
  EXPECT_EQ(with_header("neg.safetensors", R"({"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})"),
            (dir / "neg.safetensors") + ": tensor 'w': negative size -1 in its shape");
  test::write_file(dir / "short.safetensors", "abc");
  EXPECT_EQ(error_of([&] { load_safetensors(dir / "short.safetensors"); }),
            (dir / "short.safetensors") + ": truncated (no header length)");
  EXPECT_EQ(error_of([&] { load_safetensors(dir / "none.safetensors"); }), (dir / "none.safetensors") + ": no such file");
}

TEST(StateDict, KeysAreTheModuleNamesAndLoadIsExact) {
  auto a = basicnet(10), b = basicnet(10);
  std::vector<std::string> keys;
  for (auto& [k, _] : state_dict(*a)) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                                            "fc1.bias", "fc2.weight", "fc2.bias"}));
  load_state_dict(*b, state_dict(*a), "a");
  for (auto& [k, v] : state_dict(*b)) EXPECT_TRUE(torch::equal(v, a->named_parameters()[k])) << k;

  TensorList missing = state_dict(*a);
  missing.erase(missing.begin());
  missing.emplace_back("fc3.weight", torch::zeros({1}));
  EXPECT_EQ(error_of([&] { load_state_dict(*b, missing, "w.safetensors"); }),
            "w.safetensors: weights do not match the model: missing keys: conv1.weight; unexpected keys: fc3.weight");
}

TEST(StateDict, ClassifierOfAnotherShapeIsReinitialisedAndReported) {
  auto ten = basicnet(10), three = basicnet(3);
  at::Tensor fresh = three->named_parameters()["fc2.weight"].clone();
  auto report = load_state_dict(*three, state_dict(*ten), "w", three->classifier_pattern());
  ASSERT_EQ(report.reinitialised.size(), 2u);
  EXPECT_EQ(report.reinitialised[0], "fc2.weight [10, 128] -> [3, 128]");
  EXPECT_TRUE(torch::equal(three->named_parameters()["fc2.weight"], fresh));
  EXPECT_TRUE(torch::equal(three->named_parameters()["fc1.weight"], ten->named_parameters()["fc1.weight"]));
  EXPECT_NE(error_of([&] { load_state_dict(*three, state_dict(*ten), "w"); }).find("wrong shapes: fc2.weight (file [10, 128], model [3, 128])"),
            std::string::npos);
}

}  // namespace
}  // namespace trainrun
