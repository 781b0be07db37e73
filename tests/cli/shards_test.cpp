// `trainrun shards` (the real binary) read back with Python's own tarfile: the members WebDataset's
// TarWriter writes (KEY.cls then KEY.<ext>, USTAR, mode 0o444, bigdata:bigdata, a fixed mtime),
// the source files' bytes, the labels, the order torch.randperm gives, sizes.json and
// classes.txt; the same bytes from two runs; shards cut at --max-count and --max-size; an MNIST
// set's pixels back from the PNG field (decoded by PIL); a non-empty output folder refused.
#include "components/data/image.h"
#include "test_util.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <tuple>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every file of the output folder, read by Python: each shard's members (tarfile's view of each
// header, the header's magic bytes, the data's sha256 and, for .cls, its text), sizes.json,
// classes.txt, the sha256 of every file under SOURCE, and torch.randperm(n, seed) for each N.
constexpr const char* kReadShards = R"py(
import hashlib, json, os, sys, tarfile
out, source, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = {"files": sorted(os.listdir(out)), "shards": {}, "source": {}, "randperm": {}}
for name in res["files"]:
    path = os.path.join(out, name)
    if name.endswith(".tar"):
        raw = open(path, "rb").read()
        members = []
        with tarfile.open(path, "r:") as tar:
            for m in tar.getmembers():
                data = tar.extractfile(m).read()
                members.append({"name": m.name, "mode": m.mode, "uname": m.uname, "gname": m.gname, "uid": m.uid,
                                "gid": m.gid, "mtime": m.mtime, "type": m.type.decode(), "size": m.size,
                                "magic": raw[m.offset + 257:m.offset + 265].hex(),
                                "sha256": hashlib.sha256(data).hexdigest(),
                                "text": data.decode() if m.name.endswith(".cls") else None})
        res["shards"][name] = {"bytes": len(raw), "members": members}
    elif name == "sizes.json":
        res["sizes"] = json.load(open(path))
    elif name == "classes.txt":
        res["classes"] = open(path).read()
for root, _, files in os.walk(source):
    for f in files:
        p = os.path.join(root, f)
        res["source"][p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
import torch
for n in sys.argv[4:]:
    res["randperm"][n] = torch.randperm(int(n), generator=torch.Generator().manual_seed(seed)).tolist()
print(json.dumps(res))
)py";

json read_shards(const test::TempDir& dir, const std::string& out, const std::string& source, int seed,
                 const std::vector<int>& sizes) {
  test::write_file(dir / "read_shards.py", kReadShards);
  std::string args;
  for (int n : sizes) args += " " + std::to_string(n);
  auto r = test::run(std::string(test::kPython) + " " + (dir / "read_shards.py") + " " + out + " " + source + " " +
                     std::to_string(seed) + args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

// The folder's images in image_folder's order (classes sorted, files sorted), with their labels.
struct Image {
  std::string path;
  int64_t label;
};

// ROOT/{train,val}/{cat,dog,fox}: PNG, JPEG (.jpg, .JPG and .jpeg) files of different sizes.
std::pair<std::vector<Image>, std::vector<Image>> write_folder(const std::string& root) {
  torch::manual_seed(0);
  const std::vector<std::string> classes = {"cat", "dog", "fox"};
  const std::vector<std::string> names = {"a.png", "b.jpg", "c.JPG", "d.jpeg"};
  std::vector<Image> train, val;
  for (int64_t c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i) {
      const bool in_val = (i == 3 && c != 1) || (c == 1 && i == 0);
      const std::string dir = root + (in_val ? "/val/" : "/train/") + classes[std::size_t(c)];
      std::string name = names[std::size_t(i)];
      fs::create_directories(dir);
      const int64_t h = 20 + 7 * i + c, w = 30 + 5 * c + i;
      std::string path = dir + "/" + name;
      write_image(name == "c.JPG" ? dir + "/c.jpg" : path, torch::randint(0, 256, {h, w, 3}, torch::kUInt8));
      if (name == "c.JPG") fs::rename(dir + "/c.jpg", path);
      (in_val ? val : train).push_back({path, c});
    }
  auto by_class_then_path = [](const Image& a, const Image& b) { return std::tie(a.label, a.path) < std::tie(b.label, b.path); };
  std::sort(train.begin(), train.end(), by_class_then_path);
  std::sort(val.begin(), val.end(), by_class_then_path);
  return {train, val};
}

std::string folder_recipe(const test::TempDir& dir, const std::string& root) {
  test::write_file(dir / "recipe.yaml", "model: {name: basicnet, num_classes: auto}\n"
                                        "data:\n"
                                        "  dataset: {name: image_folder, root: " + root + "/train, val_root: " + root + "/val}\n"
                                        "  batch_size: 4\n"
                                        "train: {epochs: 1, loss: nll}\n"
                                        "optimizer: {name: adam, lr: 1.0e-3}\n");
  return dir / "recipe.yaml";
}

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string().substr(1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

// The members of `split`'s shards in order, with the shard each is in.
std::vector<std::pair<std::string, json>> members_of(const json& read, const std::string& split) {
  std::vector<std::pair<std::string, json>> out;
  for (auto& [name, shard] : read["shards"].items())
    if (name.rfind(split + "-", 0) == 0)
      for (auto& m : shard["members"]) out.emplace_back(name, m);
  return out;
}

// Each sample k of `images` (written in the order `order` says): KEY.cls with the label, then
// KEY.<ext> with the file's bytes; every header as TarWriter writes it.
void expect_samples(const json& read, const std::string& split, const std::vector<Image>& images,
                    const std::vector<int64_t>& order) {
  const auto members = members_of(read, split);
  ASSERT_EQ(members.size(), 2 * images.size()) << split;
  for (std::size_t k = 0; k < images.size(); ++k) {
    const Image& img = images.at(std::size_t(order.at(k)));
    const std::string key = fmt::format("{:09d}", k);
    const json& cls = members[2 * k].second;
    const json& image = members[2 * k + 1].second;
    EXPECT_EQ(cls["name"], key + ".cls");
    EXPECT_EQ(cls["text"], std::to_string(img.label)) << key;
    EXPECT_EQ(image["name"], key + "." + lower_extension(img.path));
    EXPECT_EQ(image["sha256"], read["source"][img.path]) << key << " is not the bytes of " << img.path;
    EXPECT_EQ(members[2 * k].first, members[2 * k + 1].first) << key << ": a sample split across two shards";
  }
  for (auto& [shard, m] : members) {
    EXPECT_EQ(m["mode"], 0444) << m["name"];
    EXPECT_EQ(m["uname"], "bigdata");
    EXPECT_EQ(m["gname"], "bigdata");
    EXPECT_EQ(m["uid"], 0);
    EXPECT_EQ(m["gid"], 0);
    EXPECT_EQ(m["mtime"], 0);
    EXPECT_EQ(m["type"], "0");                  // a regular file
    EXPECT_EQ(m["magic"], "7573746172003030");  // "ustar\0" "00": POSIX USTAR, TarWriter's default
  }
}

std::vector<int64_t> as_order(const json& perm) { return perm.get<std::vector<int64_t>>(); }

std::vector<int64_t> identity(std::size_t n) {
  std::vector<int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = int64_t(i);
  return v;
}

TEST(Shards, ImageFolderReadsBackWithPythonTarfile) {
  test::TempDir dir;
  auto [train, val] = write_folder(dir / "photos");
  ASSERT_EQ(train.size(), 9u);
  ASSERT_EQ(val.size(), 3u);
  auto r = test::run(test::trainrun("shards " + folder_recipe(dir, dir / "photos") + " --output " + (dir / "shards")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("train-000000.tar: 9 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validation-000000.tar: 3 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train: 1 shard, 9 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shuffled with seed 0"), std::string::npos) << r.out;

  const json read = read_shards(dir, dir / "shards", dir / "photos", 0, {9, 3});
  EXPECT_EQ(read["files"], json({"classes.txt", "sizes.json", "train-000000.tar", "validation-000000.tar"}));
  expect_samples(read, "train", train, as_order(read["randperm"]["9"]));
  expect_samples(read, "validation", val, as_order(read["randperm"]["3"]));
  EXPECT_NE(as_order(read["randperm"]["9"]), identity(9));  // so the order is the permutation's, not the folder's
  EXPECT_EQ(read["sizes"], json({{"train-000000.tar", 9}, {"validation-000000.tar", 3}}));
  EXPECT_EQ(read["classes"], "cat\ndog\nfox\n");
  for (auto& [name, shard] : read["shards"].items()) EXPECT_EQ(shard["bytes"].get<int64_t>() % 10240, 0) << name;

  // --no-shuffle: the folder's order, class by class.
  r = test::run(test::trainrun("shards " + (dir / "recipe.yaml") + " --no-shuffle --output " + (dir / "ordered")));
  ASSERT_EQ(r.code, 0) << r.err;
  const json ordered = read_shards(dir, dir / "ordered", dir / "photos", 0, {});
  expect_samples(ordered, "train", train, identity(9));
  expect_samples(ordered, "validation", val, identity(3));
}

TEST(Shards, TheSameInputGivesTheSameBytes) {
  test::TempDir dir;
  write_folder(dir / "photos");
  const std::string recipe = folder_recipe(dir, dir / "photos");
  for (const char* out : {"a", "b"}) {
    auto r = test::run(test::trainrun("shards " + recipe + " --max-count 4 --output " + (dir / out)));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  auto r = test::run(test::trainrun("shards " + recipe + " --max-count 4 --seed 1 --output " + (dir / "seed1")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir / "a")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, std::vector<std::string>({"classes.txt", "sizes.json", "train-000000.tar", "train-000001.tar",
                                             "train-000002.tar", "validation-000000.tar"}));
  for (auto& name : names) {
    EXPECT_EQ(test::read_file(dir / ("a/" + name)), test::read_file(dir / ("b/" + name))) << name << " differs between two runs";
    EXPECT_TRUE(fs::exists(dir / ("seed1/" + name))) << name;
  }
  // Another seed, another order.
  EXPECT_NE(test::read_file(dir / "a/train-000000.tar"), test::read_file(dir / "seed1/train-000000.tar"));
}

TEST(Shards, MaxCountAndMaxSizeStartNewShards) {
  test::TempDir dir;
  auto [train, val] = write_folder(dir / "photos");
  const std::string recipe = folder_recipe(dir, dir / "photos");

  auto r = test::run(test::trainrun("shards " + recipe + " --max-count 3 --output " + (dir / "count")));
  ASSERT_EQ(r.code, 0) << r.err;
  json read = read_shards(dir, dir / "count", dir / "photos", 0, {9, 3});
  EXPECT_EQ(read["sizes"], json({{"train-000000.tar", 3}, {"train-000001.tar", 3}, {"train-000002.tar", 3},
                                 {"validation-000000.tar", 3}}));
  for (auto& [name, shard] : read["shards"].items())
    EXPECT_EQ(shard["members"].size(), 2 * read["sizes"][name].get<std::size_t>()) << name;
  expect_samples(read, "train", train, as_order(read["randperm"]["9"]));  // keys run on across shards

  // One photo of 60 KB or so among images of 1 to 5 KB: with --max-size 30KB each shard holds
  // what fits in 30,000 bytes, the next sample would not have, and the big one is alone.
  write_image(train.front().path, torch::randint(0, 256, {150, 130, 3}, torch::kUInt8));
  ASSERT_GT(fs::file_size(train.front().path), 40000u);
  r = test::run(test::trainrun("shards " + recipe + " --max-size 30KB --output " + (dir / "size")));
  ASSERT_EQ(r.code, 0) << r.err;
  read = read_shards(dir, dir / "size", dir / "photos", 0, {9, 3});
  expect_samples(read, "train", train, as_order(read["randperm"]["9"]));
  auto member_bytes = [](const json& m) { return 512 + (m["size"].get<int64_t>() + 511) / 512 * 512; };
  auto file_bytes = [](int64_t members) { return (members + 1024 + 10239) / 10240 * 10240; };
  std::vector<std::string> shards;
  for (auto& [name, _] : read["shards"].items())
    if (name.rfind("train-", 0) == 0) shards.push_back(name);
  ASSERT_GE(shards.size(), 3u);
  bool big_alone = false;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const json& shard = read["shards"][shards[s]];
    const int64_t bytes = shard["bytes"], samples = read["sizes"][shards[s]];
    int64_t members = 0;
    for (auto& m : shard["members"]) members += member_bytes(m);
    EXPECT_EQ(bytes, file_bytes(members)) << shards[s];
    if (samples == 1 && bytes > 30000) big_alone = true;
    if (samples > 1) {
      EXPECT_LE(bytes, 30000) << shards[s];
    }
    if (s + 1 < shards.size()) {
      const json& next = read["shards"][shards[s + 1]]["members"];
      EXPECT_GT(file_bytes(members + member_bytes(next[0]) + member_bytes(next[1])), 30000)
          << shards[s] << " had room for the next sample";
    }
  }
  EXPECT_TRUE(big_alone) << "the 60 KB sample is not alone in a shard";
}

// The shards, sizes.json and classes.txt are what data.dataset: webdataset reads: `check` counts
// the samples from sizes.json and names the classes. Shards are not written again from shards.
TEST(Shards, TheWebdatasetDatasetReadsThem) {
  test::TempDir dir;
  write_folder(dir / "photos");
  auto r = test::run(test::trainrun("shards " + folder_recipe(dir, dir / "photos") + " --max-count 4 --output " + (dir / "shards")));
  ASSERT_EQ(r.code, 0) << r.err;
  test::write_file(dir / "wds.yaml", "model: {name: basicnet, num_classes: auto}\n"
                                     "data:\n"
                                     "  dataset: {name: webdataset, urls: '" + (dir / "shards/train-{000000..000002}.tar") +
                                     "', eval_urls: " + (dir / "shards/validation-000000.tar") + ", channels: 1}\n"
                                     "  train_transforms: [{resize: {size: [28, 28]}}, to_tensor]\n"
                                     "  eval_transforms: [{resize: {size: [28, 28]}}, to_tensor]\n"
                                     "  batch_size: 4\n"
                                     "train: {epochs: 1, loss: nll}\n"
                                     "optimizer: {name: adam, lr: 1.0e-3}\n");
  r = test::run(test::trainrun("check " + (dir / "wds.yaml")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("data: webdataset, 3 classes, 9 train / 3 validation examples"), std::string::npos) << r.out;

  r = test::run(test::trainrun("shards " + (dir / "wds.yaml") + " --output " + (dir / "again")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "shards: data.dataset: webdataset is tar shards already; trainrun shards writes datasets read by "
                   "index (image_folder, pets_folder, mnist, ...)\n");
  EXPECT_FALSE(fs::exists(dir / "again"));
}

TEST(Shards, MnistPixelsComeBackFromThePngField) {
  test::TempDir dir;
  std::mt19937 rng(5);
  for (auto [prefix, n] : {std::pair<std::string, uint32_t>{"train", 30}, {"t10k", 7}}) {
    std::string pixels(n * 28 * 28, '\0'), labels(n, '\0');
    for (char& p : pixels) p = char(rng() % 256);
    for (char& l : labels) l = char(rng() % 10);
    test::write_file(dir / ("mnist/" + prefix + "-images-idx3-ubyte"), test::idx_file({n, 28, 28}, pixels));
    test::write_file(dir / ("mnist/" + prefix + "-labels-idx1-ubyte"), test::idx_file({n}, labels));
  }
  test::write_file(dir / "recipe.yaml", "model: {name: basicnet, num_classes: auto}\n"
                                        "data:\n"
                                        "  dataset: {name: mnist, root: " + (dir / "mnist") + "}\n"
                                        "  batch_size: 4\n"
                                        "train: {epochs: 1, loss: nll}\n"
                                        "optimizer: {name: adam, lr: 1.0e-3}\n");
  // The first 25 training examples (data.max_train_samples), in seed 3's order.
  auto r = test::run(test::trainrun("shards " + (dir / "recipe.yaml") +
                                    " data.max_train_samples=25 --seed 3 --max-count 10 --output " + (dir / "shards")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("train: 3 shards, 25 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test: 1 shard, 7 samples"), std::string::npos) << r.out;

  // Python reads the IDX files itself and the shards with tarfile; PIL decodes each PNG.
  test::write_file(dir / "check.py", R"py(
import io, json, os, sys, tarfile
import numpy as np, torch
from PIL import Image
root, out = sys.argv[1], sys.argv[2]
def idx(name, header):
    return np.frombuffer(open(os.path.join(root, name), "rb").read()[header:], np.uint8)
bad, seen = [], {}
for split, prefix, n, order in [("train", "train", 25, torch.randperm(25, generator=torch.Generator().manual_seed(3)).tolist()),
                                ("test", "t10k", 7, torch.randperm(7, generator=torch.Generator().manual_seed(3)).tolist())]:
    images = idx(prefix + "-images-idx3-ubyte", 16).reshape(-1, 28, 28)
    labels = idx(prefix + "-labels-idx1-ubyte", 8)
    fields = {}
    for shard in sorted(f for f in os.listdir(out) if f.startswith(split + "-")):
        with tarfile.open(os.path.join(out, shard)) as tar:
            for m in tar.getmembers():
                fields[m.name] = tar.extractfile(m).read()
    seen[split] = sorted(fields)
    for k in range(n):
        key, i = "%09d" % k, order[k]
        png = Image.open(io.BytesIO(fields[key + ".png"]))
        if png.format != "PNG" or png.mode != "L" or not np.array_equal(np.asarray(png), images[i]):
            bad.append(f"{split} {key}: not the pixels of example {i} ({png.format} {png.mode})")
        if fields[key + ".cls"] != str(labels[i]).encode():
            bad.append(f"{split} {key}: label {fields[key + '.cls']} != {labels[i]}")
    if len(fields) != 2 * n:
        bad.append(f"{split}: {len(fields)} members for {n} samples")
print(json.dumps({"bad": bad, "classes": open(os.path.join(out, "classes.txt")).read().splitlines()}))
)py");
  auto check = test::run(std::string(test::kPython) + " " + (dir / "check.py") + " " + (dir / "mnist") + " " + (dir / "shards"));
  ASSERT_EQ(check.code, 0) << check.err;
  const json result = json::parse(check.out);
  EXPECT_TRUE(result["bad"].empty()) << result["bad"].dump(1);
  EXPECT_EQ(result["classes"], json({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));  // mnist's default names
}

TEST(Shards, AnOutputFolderThatIsNotEmptyIsRefused) {
  test::TempDir dir;
  write_folder(dir / "photos");
  const std::string recipe = folder_recipe(dir, dir / "photos");
  test::write_file(dir / "out/notes.txt", "mine");
  auto r = test::run(test::trainrun("shards " + recipe + " --output " + (dir / "out")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "shards: --output " + (dir / "out") +
                       ": the folder is not empty; nothing written (give a new or empty folder)\n");
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(dir / "out")) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"notes.txt"});
  EXPECT_EQ(test::read_file(dir / "out/notes.txt"), "mine");

  r = test::run(test::trainrun("shards " + recipe + " --output " + (dir / "out/notes.txt")));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "shards: --output " + (dir / "out/notes.txt") + ": is a file, not a folder; nothing written\n");

  r = test::run(test::trainrun("shards " + recipe + " --max-size 12XB --output " + (dir / "new")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("shards: --max-size '12XB': expected a size in bytes"), std::string::npos) << r.err;
  r = test::run(test::trainrun("shards " + recipe + " --max-size 5KB --output " + (dir / "new")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("shards: --max-size 5KB: below one tar record (10240 bytes)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "new"));
}

}  // namespace
}  // namespace trainrun
