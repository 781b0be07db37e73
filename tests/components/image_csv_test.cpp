// image_csv: images labelled by a CSV or JSON-lines file, one label or a set per image; the
// loader's multi-hot targets; and each bad labels file as one line naming the file and line.
#include "components/data/image.h"
#include "components/data/sources/image_files.h"

#include "make_dataset.h"
#include "test_util.h"

#include <algorithm>
#include <filesystem>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using test::picture;

// The dataset with `keys` (YAML flow-map entries) and the schema's defaults for the rest.
DatasetSplits image_csv(const std::string& keys) {
  const auto& entry = Registry<Dataset>::instance().get("image_csv");
  return entry.make(Config(test::with_defaults(entry.schema, YAML::Load("{" + keys + "}")), "data.dataset"));
}

// root/img/a.jpg ... e.jpg (five pictures) and `labels` as the file `name`.
std::string folder_with(const test::TempDir& dir, const std::string& name, const std::string& labels) {
  fs::create_directories(dir / "img");
  int64_t seed = 0;
  for (const char* image : {"a", "b", "c", "d", "e"}) write_image(dir / ("img/" + std::string(image) + ".png"), picture(++seed));
  test::write_file(dir / name, labels);
  return "root: " + (dir / "img") + ", labels_file: " + (dir / name);
}

// Planet's layout: image names without their extension, tags separated by spaces.
TEST(ImageCsv, PlanetTagsAreSetsOfSortedClasses) {
  test::TempDir dir;
  const std::string keys = folder_with(dir, "train_v2.csv",
                                       "image_name,tags\n"
                                       "a,haze primary\n"
                                       "b,clear primary water\n"
                                       "c,clear\n"
                                       "d,\"cloudy\"\n"
                                       "e,primary  haze\n");
  auto d = image_csv(keys + ", labels_column: tags, extension: .png, val_fraction: 0.4");
  EXPECT_EQ(d.classes, (std::vector<std::string>{"clear", "cloudy", "haze", "primary", "water"}));
  ASSERT_TRUE(d.train->multilabel());
  ASSERT_EQ(d.train->size() + d.eval->size(), 5u);
  std::map<std::string, std::vector<int64_t>> by_image;
  for (const auto* split : {d.train.get(), d.eval.get()}) {
    const auto& files = dynamic_cast<const ImageFiles&>(*split);
    for (std::size_t i = 0; i < files.size(); ++i) by_image[fs::path(files.path(i)).stem()] = files.labels(i);
  }
  EXPECT_EQ(by_image["a"], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(by_image["b"], (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(by_image["d"], (std::vector<int64_t>{1}));
  EXPECT_EQ(by_image["e"], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(d.train->get(0).labels, d.train->labels(0));

  // The loader's targets: a row of num_classes per image, 1 at its labels.
  LoaderOptions o = test::loader_options(2, 0, 1);
  o.num_classes = int64_t(d.classes.size());
  DataLoader loader(d.train, test::transforms({{"to_tensor", "{}"}}), o);
  const auto batches = test::load_epoch(loader, 0);
  ASSERT_FALSE(batches.empty());
  const at::Tensor& t = batches[0].targets;
  EXPECT_EQ(t.scalar_type(), at::kFloat);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(t.sum().item<float>(), float(d.train->labels(0).size() + d.train->labels(1).size()));
}

// One column per class (0/1), a `|`-separated cell, JSON lines, and a single-label file.
TEST(ImageCsv, WideColumnsPipesJsonLinesAndSingleLabels) {
  test::TempDir dir;
  auto wide = image_csv(folder_with(dir, "wide.csv", "image,sky,sea,sand\na.png,1,0,1\nb.png,0,1,0\n") +
                        ", val_labels_file: " + (dir / "wide.csv"));
  EXPECT_EQ(wide.classes, (std::vector<std::string>{"sky", "sea", "sand"}));  // the header's order
  EXPECT_EQ(wide.train->labels(0), (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(wide.train->multilabel());

  test::write_file(dir / "pipes.csv", "file,labels\na.png,dog|grass\nb.png,\"dog | outdoor, sunny\"\n");
  auto pipes = image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "pipes.csv") + ", val_labels_file: " +
                         (dir / "pipes.csv"));
  EXPECT_EQ(pipes.classes, (std::vector<std::string>{"dog", "grass", "outdoor, sunny"}));
  EXPECT_EQ(pipes.train->labels(1), (std::vector<int64_t>{0, 2}));

  test::write_file(dir / "tags.jsonl", "{\"image\": \"a.png\", \"labels\": [\"x\", \"y\"]}\n\n{\"image\": \"b.png\", \"label\": 3}\n");
  auto jsonl = image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "tags.jsonl") + ", val_labels_file: " +
                         (dir / "tags.jsonl"));
  EXPECT_EQ(jsonl.classes, (std::vector<std::string>{"3", "x", "y"}));
  EXPECT_EQ(jsonl.train->labels(0), (std::vector<int64_t>{1, 2}));

  test::write_file(dir / "single.csv", "image,label\na.png,cat\nb.png,dog\nc.png,cat\n");
  auto single = image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "single.csv") + ", val_labels_file: " +
                          (dir / "single.csv"));
  EXPECT_FALSE(single.train->multilabel());
  EXPECT_EQ(single.train->label(1), 1);
  EXPECT_EQ(single.train->get(2).label, 0);
}

// A row that cannot be an example is left out with one line naming the file and line (the job
// stops on it, or warns, as data.on_bad_file says); a file with no usable row is that line as an
// error, and so is a file that is not a labels file.
TEST(ImageCsv, BadRowsAreLeftOutNamingTheFileAndLine) {
  test::TempDir dir;
  const std::string base = folder_with(dir, "ok.csv", "image,labels\na.png,x\n");
  auto left_out = [&](const std::string& text, const std::string& extra = "") {
    test::write_file(dir / "bad.csv", text);
    auto d = image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "bad.csv") + ", val_labels_file: " +
                       (dir / "ok.csv") + extra);
    EXPECT_EQ(d.train->size(), std::size_t(std::count(text.begin(), text.end(), '\n') - 1) - d.left_out.size());
    return d.left_out;
  };
  const std::string f = dir / "bad.csv";
  using Lines = std::vector<std::string>;
  EXPECT_EQ(left_out("image,labels\na.png,x\nb.png,\n"), Lines{f + ": line 3: image 'b.png' has no label"});
  EXPECT_EQ(left_out("image,labels\na.png,x\nb.png,y\na.png,z\n"),
            Lines{f + ": line 4: image 'a.png' is listed again (first on line 2)"});
  EXPECT_EQ(left_out("image,labels\na.png,x\nzz.png,x\nc.png,y\nyy.png,y\n"),
            (Lines{f + ": line 3: image 'zz.png': no such file " + (dir / "img/zz.png"),
                   f + ": line 5: image 'yy.png': no such file " + (dir / "img/yy.png")}));
  EXPECT_EQ(left_out("image,labels\na.png,x y\nb.png,x\n", ", classes: [x]"),
            Lines{f + ": line 2: label 'y' is not one of the 1 classes (data.dataset.classes)"});
  EXPECT_EQ(left_out("image,labels\na.png,x y\nb.png,x\n", ", multilabel: false"),
            Lines{f + ": line 2: image 'a.png' has 2 labels, but multilabel is false"});
  test::write_file(dir / "none.csv", "image,labels\nzz.png,x\nyy.png,x\n");
  EXPECT_EQ(test::error_of<DataError>([&] { image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "none.csv")); }),
            (dir / "none.csv") + ": line 2: image 'zz.png': no such file " + (dir / "img/zz.png") +
                " (no row is usable: all 2 have a problem)");
}

// A file that is not a labels file: one DataError naming the file and line.
TEST(ImageCsv, BadLabelFilesNameTheFileAndLine) {
  test::TempDir dir;
  const std::string base = folder_with(dir, "ok.csv", "image,labels\na.png,x\n");
  auto error = [&](const std::string& text, const std::string& extra = "") {
    test::write_file(dir / "bad.csv", text);
    return test::error_of<DataError>([&] {
      image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "bad.csv") + ", val_labels_file: " +
                (dir / "ok.csv") + extra);
    });
  };
  const std::string f = dir / "bad.csv";
  EXPECT_EQ(error("image,labels\na.png,x\nb.png,x,y\n"), f + ": line 3: 3 fields, the header has 2");
  EXPECT_EQ(error("image,a,b\na.png,1,2\n"), f + ": line 2: column 'b' is '2'; a class column holds 0 or 1");
  EXPECT_EQ(error("image,labels\na.png,\"x\ny\"z\n"),
            f + ": line 3: not valid CSV (error parsing data while strict checking enabled; a quote inside a field "
                "must be doubled, \"\")");
  EXPECT_EQ(error("name,labels\na.png,x\n", ", image_column: image"),
            f + ": line 1: no column 'image' (image_column); the header has: name, labels");
  test::write_file(dir / "bad.jsonl", "{\"image\": \"a.png\", \"labels\": [\"x\"]}\n{\"image\": \"b.png\", \"labels\": [1.5]}\n");
  EXPECT_EQ(test::error_of<DataError>([&] {
              image_csv("root: " + (dir / "img") + ", labels_file: " + (dir / "bad.jsonl"));
            }),
            (dir / "bad.jsonl") + ": line 2: a label is 1.5; labels are strings or integers");
}

}  // namespace
}  // namespace trainrun
