// A dataset plugin (datasets/csv_images): image files listed in CSV files, one `path,label` row
// each under a `path,label` header; a path relative to its CSV's folder, a label a class name.
// The classes are the training CSV's labels, sorted; the images are decoded as the built-in
// folder datasets decode them (components/data/sources/image_files.h: OpenCV inside libtrainrun, PIL's
// channel order, decoded only when the loader asks). Bad rows are DataErrors naming file:line.
//
//   data:
//     dataset: {name: csv_images, train: data/train.csv, eval: data/eval.csv, channels: 1}
#include "components/data/sources/image_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace {

using namespace trainrun;
namespace fs = std::filesystem;

struct CsvRow {
  std::string path, label, where;  // where: "file.csv:3"
};

std::vector<CsvRow> read_rows(const fs::path& csv) {
  std::ifstream in(csv);
  if (!in) throw DataError(csv.string() + ": cannot read");
  std::vector<CsvRow> rows;
  std::string line;
  if (!std::getline(in, line) || line != "path,label")
    throw DataError(csv.string() + ":1: expected the header 'path,label'");
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto comma = line.rfind(',');  // the label holds no comma; a path may
    std::string where = csv.string() + ":" + std::to_string(n);
    if (comma == std::string::npos || comma == 0 || comma + 1 == line.size())
      throw DataError(where + ": expected 'path,label', got '" + line + "'");
    fs::path path = line.substr(0, comma);
    if (path.is_relative()) path = csv.parent_path() / path;
    rows.push_back({path.string(), line.substr(comma + 1), where});
  }
  if (rows.empty()) throw DataError(csv.string() + ": no images listed");
  return rows;
}

std::shared_ptr<ImageFiles> image_files(const std::vector<CsvRow>& rows, const std::vector<std::string>& classes,
                                        int64_t channels) {
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  for (const auto& row : rows) {
    auto it = std::lower_bound(classes.begin(), classes.end(), row.label);
    if (it == classes.end() || *it != row.label)
      throw DataError(row.where + ": label '" + row.label + "' is not one of the training CSV's classes");
    paths.push_back(row.path);
    labels.push_back(int64_t(it - classes.begin()));
  }
  return std::make_shared<ImageFiles>(std::move(paths), std::move(labels), channels);
}

DatasetSplits make_csv_images(const Config& c) {
  auto train = read_rows(c.get<std::string>("train")), eval = read_rows(c.get<std::string>("eval"));
  std::set<std::string> names;
  for (const auto& row : train) names.insert(row.label);
  DatasetSplits out;
  out.classes.assign(names.begin(), names.end());
  out.train = image_files(train, out.classes, channels(c));  // channels(): 1 or 3, else a DataError
  out.eval = image_files(eval, out.classes, channels(c));
  out.eval_split_name = "eval";
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "csv_images", "images listed in CSV files of path,label rows (examples/custom_dataset)",
                  Schema()
                      .required("train", Type::Path, "CSV of the training images: a path,label header, then a row each")
                      .required("eval", Type::Path, "CSV of the evaluation images, labels among the training ones")
                      .add("channels", Type::Int, yaml("3"), "3 = RGB, 1 = grayscale (PIL convert('L'))").range(1, 3),
                  make_csv_images);
