// A file of labels beside a folder of images, as image_csv reads it: CSV (RFC 4180, libcsv) or
// JSON lines (`.jsonl`), one row per image.
//   CSV, two columns: image,labels  (labels separated by `|` when some cell of the file has one,
//                                    else by spaces, as Kaggle's Planet train_v2.csv)
//   CSV, wide:        image,CLASS_A,CLASS_B,...   (0/1 per class, the header naming the classes)
//   JSON lines:       {"image": "a.jpg", "labels": ["x", "y"]}   (or "labels": "x y", or "label": "x")
// The first row of a CSV is its header. Each problem is one DataError naming the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun {

struct LabelFileOptions {
  std::string image_column;   // empty: "image" if there is one, else the first column
  std::string labels_column;  // empty: "labels" or "label" if there is one, else the second column (two columns)
  std::string separator;      // between labels in a cell (" ": runs of whitespace); empty: `|` when some
                              // cell of the file has one, else " "
};

struct LabelRow {
  std::string image;
  std::vector<std::string> labels;  // as written (in a wide file: the columns marked 1)
  int64_t line = 0;                 // 1-based, where the row starts
};

struct LabelFile {
  std::vector<LabelRow> rows;
  std::vector<std::string> columns;  // a wide file's class columns, in the header's order; else empty
};

LabelFile read_label_file(const std::string& path, const LabelFileOptions& options);

}  // namespace trainrun
