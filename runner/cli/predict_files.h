// What `trainrun predict` reads and writes besides the model: the image files its arguments name,
// and --output, every image's top k as timm's inference.py writes its results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainrun::cli {

// The image files `args` name, in order: a file as it is; a folder as the images under it
// (recursively, following links, as timm's inference.py finds a folder's images, sorted by
// timm's natural_key of the path); a pattern a shell left quoted (`'photos/*.jpg'`) as the paths
// glob(3) matches, each taken as above. RecipeError (exit 2) for a path that is not there, a
// folder without images, a pattern that matches nothing.
std::vector<std::string> image_files(const std::vector<std::string>& args);

// One image's top k, best first: class indices, their labels and softmax probabilities.
struct TopK {
  std::string file;
  std::vector<int64_t> index;
  std::vector<std::string> label;
  std::vector<double> prob;
};

// --output: RecipeError unless `path` ends in .csv or .jsonl in a folder that exists (checked
// before any image is read).
void check_results_file(const std::string& path);
// `rows` into `path` (whole or not at all) in timm's inference.py columns filename, index, label,
// prob: with k > 1 the CSV has index_0 ... label_0 ... prob_0 ... (its --results-separate-col),
// a JSON line lists them (its json-records); with k = 1 each is one value.
void write_results(const std::string& path, const std::vector<TopK>& rows, int64_t k);

// A CSV cell as pandas' to_csv writes it (csv.QUOTE_MINIMAL): quoted when it holds a comma, a
// quote or a line break (predict's results, sweep's report, cv's out-of-fold scores).
std::string csv_cell(const std::string& text);

}  // namespace trainrun::cli
