// Images in a folder, labelled by a file beside them (label_file.h: CSV or JSON lines), one label
// or a set of labels per image: Kaggle's layout (Planet's train_v2.csv, most competitions'
// train.csv). Classes are the file's labels, sorted (or `classes:` in that order). The eval split
// is a second labels file (`val_labels_file`, images under the same root) or a seeded share.
// Multi-label (`multilabel: auto`) when a row has other than one label or the file has a column
// per class. A row with an unknown label, no label, an image listed twice or a missing image is
// left out with one line naming the file and line (DatasetSplits::left_out: data.on_bad_file
// decides whether the run stops); a file whose every row is bad is that first line as an error.
#include "components/data/sources/image_files.h"
#include "components/data/sources/label_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

LabelFileOptions label_options(const Config& c) {
  LabelFileOptions o;
  if (!c.is_null("image_column")) o.image_column = c.get<std::string>("image_column");
  if (!c.is_null("labels_column")) o.labels_column = c.get<std::string>("labels_column");
  if (!c.is_null("label_separator")) o.separator = c.get<std::string>("label_separator");
  return o;
}

// The image file a row names: under root, with `extension` added where the name has none.
std::string image_path(const fs::path& root, const std::string& name, const std::string& extension) {
  fs::path p = root / name;
  if (!extension.empty() && !p.has_extension()) p += extension;
  return p.string();
}

struct Listed {
  LabelFile file;
  std::string path;
};

Listed read(const Config& c, const std::string& key) {
  const std::string path = c.get<std::string>(key);
  if (!fs::is_regular_file(path)) throw MissingDataFolder(key, path + ": no such labels file (" + c.path() + "." + key + ")");
  return {read_label_file(path, label_options(c)), path};
}

std::vector<std::string> classes_of(const Config& c, const Listed& train) {
  if (!c.is_null("classes")) return c.get<std::vector<std::string>>("classes");
  if (!train.file.columns.empty()) return train.file.columns;
  std::set<std::string> names;
  for (const auto& row : train.file.rows) names.insert(row.labels.begin(), row.labels.end());
  if (names.empty()) throw DataError(train.path + ": no labels in the file");
  return {names.begin(), names.end()};
}

// Why a row cannot be an example (naming the file and line), or "" when it can: then its image's
// path and label set are set.
std::string check_row(const LabelRow& row, const std::string& file, const std::map<std::string, int64_t>& index,
                      const Config& c, bool multilabel, std::string& path, std::set<int64_t>& set) {
  const std::string where = fmt::format("{}: line {}", file, row.line);
  if (row.image.empty()) return where + ": no image name";
  if (row.labels.empty()) return where + ": image '" + row.image + "' has no label";
  if (!multilabel && row.labels.size() > 1)
    return fmt::format("{}: image '{}' has {} labels, but multilabel is false", where, row.image, row.labels.size());
  for (const std::string& label : row.labels) {
    auto it = index.find(label);
    if (it == index.end())
      return fmt::format("{}: label '{}' is not one of the {} classes ({}.classes)", where, label, index.size(), c.path());
    set.insert(it->second);
  }
  path = image_path(c.get<std::string>("root"), row.image, c.is_null("extension") ? "" : c.get<std::string>("extension"));
  if (!fs::is_regular_file(path)) return fmt::format("{}: image '{}': no such file {}", where, row.image, path);
  return "";
}

// The rows as image files with label sets; the rows that cannot be go to `left_out`.
ImageFiles to_images(const Listed& listed, const std::vector<std::string>& classes, const Config& c, bool multilabel,
                     std::vector<std::string>& left_out) {
  std::map<std::string, int64_t> index;
  for (std::size_t i = 0; i < classes.size(); ++i) index[classes[i]] = int64_t(i);
  std::map<std::string, int64_t> seen;  // image -> its line
  std::vector<std::string> paths, problems;
  std::vector<std::vector<int64_t>> sets;
  for (const LabelRow& row : listed.file.rows) {
    std::string path;
    std::set<int64_t> set;
    std::string problem = check_row(row, listed.path, index, c, multilabel, path, set);
    if (problem.empty())
      if (auto [it, fresh] = seen.emplace(row.image, row.line); !fresh)
        problem = fmt::format("{}: line {}: image '{}' is listed again (first on line {})", listed.path, row.line,
                              row.image, it->second);
    if (!problem.empty()) {
      problems.push_back(std::move(problem));
      continue;
    }
    paths.push_back(std::move(path));
    sets.emplace_back(set.begin(), set.end());
  }
  if (listed.file.rows.empty()) throw DataError(listed.path + ": no rows after the header");
  if (paths.empty())
    throw DataError(problems.front() +
                    (problems.size() > 1 ? fmt::format(" (no row is usable: all {} have a problem)", problems.size()) : ""));
  left_out.insert(left_out.end(), problems.begin(), problems.end());
  if (multilabel) return ImageFiles(std::move(paths), std::move(sets), channels(c));
  std::vector<int64_t> labels;
  for (const auto& s : sets) labels.push_back(s.front());
  return ImageFiles(std::move(paths), std::move(labels), channels(c));
}

bool is_multilabel(const Config& c, const Listed& train) {
  if (!c.is_word("multilabel", "auto")) return c.get<bool>("multilabel");
  if (!train.file.columns.empty()) return true;
  return std::any_of(train.file.rows.begin(), train.file.rows.end(), [](const LabelRow& r) { return r.labels.size() != 1; });
}

DatasetSplits make_image_csv(const Config& c) {
  const fs::path root = c.get<std::string>("root");
  if (!fs::is_directory(root)) throw MissingDataFolder("root", root.string() + ": no such folder");
  const Listed train = read(c, "labels_file");
  DatasetSplits out;
  out.classes = classes_of(c, train);
  const bool multilabel = is_multilabel(c, train);
  ImageFiles all = to_images(train, out.classes, c, multilabel, out.left_out);
  out.eval_split_name = "validation";
  if (!c.is_null("val_labels_file")) {
    out.train = std::make_shared<ImageFiles>(std::move(all));
    out.eval = std::make_shared<ImageFiles>(to_images(read(c, "val_labels_file"), out.classes, c, multilabel, out.left_out));
    return out;
  }
  try {
    std::tie(out.train, out.eval) =
        split_files(all, c.get<double>("val_fraction"), c.get<uint64_t>("split_seed"), train.path);
  } catch (const DataError& e) {
    if (out.left_out.empty()) throw;
    throw DataError(std::string(e.what()) + ", with " + std::to_string(out.left_out.size()) +
                    " bad rows left out, the first: " + out.left_out.front());
  }
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "image_csv",
                  "images in a folder labelled by a CSV or JSON-lines file: one label or several per image "
                  "(Kaggle's train.csv, Planet's image,tags, a 0/1 column per class)",
                  add_split_and_channel_keys(
                      Schema()
                          .required("root", Type::Path, "folder the file's image names are relative to")
                          .required("labels_file", Type::Path,
                                    "CSV (a header row; image,labels or a 0/1 column per class) or .jsonl "
                                    "({\"image\": ..., \"labels\": [...]})")
                          .add("val_labels_file", Type::Path, YAML::Node(),
                               "labels of the evaluation images, same format and root; null = split labels_file")
                          .nullable()
                          .add("image_column", Type::String, YAML::Node(), "column (key) of the image name; null = "
                               "\"image\" if there is one, else the first")
                          .nullable()
                          .add("labels_column", Type::String, YAML::Node(),
                               "column (key) of the labels; null = \"labels\", \"label\" or \"tags\", else the second "
                               "of two columns; a CSV with more columns and none of these has a 0/1 column per class")
                          .nullable()
                          .add("label_separator", Type::String, YAML::Node(),
                               "between the labels of a cell; null = | when some cell of the file has one, else spaces")
                          .nullable()
                          .add("extension", Type::String, YAML::Node(),
                               "added to image names that have none (Planet's train_0 -> train_0.jpg: .jpg)")
                          .nullable()
                          .add("classes", Type::StringList, YAML::Node(),
                               "the class names in label order; null = the labels in the file, sorted (the columns "
                               "of a 0/1 file, in order)")
                          .nullable()
                          .add("multilabel", Type::Bool, YAML::Node("auto"),
                               "a set of labels per image (train.task: multilabel); auto = when a row has other "
                               "than one label, or the file has a column per class")
                          .choices({"auto"}),
                      "without val_labels_file: share held out for evaluation (torch.randperm(n, split_seed))"),
                  make_image_csv);

}  // namespace trainrun
