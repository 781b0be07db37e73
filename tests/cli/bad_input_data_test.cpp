// Bad inputs of the data (docs/reference/bad-inputs.md; the fixture: bad_input.h): missing or
// empty dataset folders, truncated files, undecodable images, WebDataset shards, one class.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

TEST_F(BadInput, MissingDatasetFolder) {
  // Named by its key and where it was written; `check` first reports what needs no data.
  expect_bad_input(recipe() + " data.dataset.root=" + (dir / "nowhere"),
                   "data.dataset.root (command line 'data.dataset.root=" + (dir / "nowhere") + "'): " + (dir / "nowhere") +
                       ": no such folder");
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

// image_csv's labels file (docs/guides/multilabel.md): an image without a label, an image listed
// twice, an image that is not there, a label `classes` does not have: each is the file and line
// under data.on_bad_file: error (skip leaves them out: Multilabel.TaskDataAndLossMismatchesAreOneLineEach).
TEST_F(BadInput, BadLabelFile) {
  fs::create_directories(dir / "tags");
  for (const char* image : {"a", "b", "c"})
    write_image(dir / ("tags/" + std::string(image) + ".png"), torch::full({28, 28, 1}, 80, torch::kUInt8));
  const std::string mnist = "{name: mnist, root: /usr/share/datasets/fashion-mnist}";
  auto with = [&](const std::string& rows, const std::string& more = "") {
    test::write_file(dir / "tags/labels.csv", "image,labels\n" + rows);
    return recipe(mnist, "{name: image_csv, root: " + (dir / "tags") + ", labels_file: " + (dir / "tags/labels.csv") +
                             ", val_fraction: 0.5, channels: 1" + more + "}") +
           " train.task=multilabel train.loss=bce_with_logits data.on_bad_file=error";
  };
  const std::string file = dir / "tags/labels.csv";
  expect_bad_input(with("a.png,sky sea\nb.png,\nc.png,sea\n"), file + ": line 3: image 'b.png' has no label");
  expect_bad_input(with("a.png,sky sea\nb.png,sea\na.png,sky\n"),
                   file + ": line 4: image 'a.png' is listed again (first on line 2)");
  expect_bad_input(with("a.png,sky sea\nd.png,sea\nc.png,sea\n"),
                   file + ": line 3: image 'd.png': no such file " + (dir / "tags/d.png"));
  expect_bad_input(with("a.png,sky sea\nb.png,sand\nc.png,sea\n", ", classes: [sky, sea]"),
                   file + ": line 3: label 'sand' is not one of the 2 classes (data.dataset.classes)");
}

}  // namespace
}  // namespace trainrun::bad_input
