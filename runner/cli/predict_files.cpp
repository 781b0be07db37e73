// predict's inputs and --output file (predict_files.h).
#include "runner/cli/predict_files.h"

#include "components/data/sources/image_files.h"
#include "support/durable_file.h"
#include "support/errors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

// timm's natural_key (timm/utils/misc.py): the lower-cased path split into text and runs of
// digits, text first (re.split(r'(\d+)', s.lower())); the runs compare as numbers.
std::vector<std::string> natural_key(const std::string& path) {
  std::vector<std::string> parts(1);
  for (char c : path) {
    const bool digit = std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (digit != (parts.size() % 2 == 0)) parts.emplace_back();
    parts.back() += char(std::tolower(static_cast<unsigned char>(c)));
  }
  return parts;
}

// Python's int() has no limit: without leading zeros a shorter run is smaller, then digit by digit.
bool number_less(const std::string& a, const std::string& b) {
  const std::string x = a.substr(std::min(a.find_first_not_of('0'), a.size()));
  const std::string y = b.substr(std::min(b.find_first_not_of('0'), b.size()));
  return x.size() != y.size() ? x.size() < y.size() : x < y;
}

// sorted(..., key=natural_key); paths timm holds equal (case, leading zeros) by their text.
bool natural_less(const std::string& a, const std::string& b) {
  const auto ka = natural_key(a), kb = natural_key(b);
  for (std::size_t i = 0; i < std::min(ka.size(), kb.size()); ++i) {
    const bool number = i % 2 == 1;
    if (number ? number_less(ka[i], kb[i]) : ka[i] < kb[i]) return true;
    if (number ? number_less(kb[i], ka[i]) : kb[i] < ka[i]) return false;
  }
  return ka.size() != kb.size() ? ka.size() < kb.size() : a < b;
}

std::vector<std::string> images_under(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && has_image_extension(e.path().filename().string())) files.push_back(e.path().string());
  if (files.empty()) throw RecipeError("predict: " + folder + ": a folder with no image files (searched recursively)");
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

std::vector<std::string> glob_matches(const std::string& pattern) {
  glob_t found{};
  const bool matched = ::glob(pattern.c_str(), 0, nullptr, &found) == 0;
  std::vector<std::string> paths(found.gl_pathv, found.gl_pathv + (matched ? found.gl_pathc : 0));
  ::globfree(&found);
  if (paths.empty()) throw RecipeError("predict: " + pattern + ": no file matches");
  return paths;
}

std::string csv_text(const std::vector<TopK>& rows, int64_t k) {
  std::string text = "filename";
  for (const char* column : {"index", "label", "prob"})
    for (int64_t i = 0; i < k; ++i) text += "," + (k == 1 ? std::string(column) : fmt::format("{}_{}", column, i));
  text += "\n";
  for (const TopK& r : rows) {
    text += csv_cell(r.file);
    for (int64_t i : r.index) text += fmt::format(",{}", i);
    for (const std::string& label : r.label) text += "," + csv_cell(label);
    for (double p : r.prob) text += fmt::format(",{}", p);
    text += "\n";
  }
  return text;
}

std::string jsonl_text(const std::vector<TopK>& rows, int64_t k) {
  std::string text;
  for (const TopK& r : rows) {
    nlohmann::ordered_json line{{"filename", r.file}};
    if (k == 1) {
      line["index"] = r.index.at(0), line["label"] = r.label.at(0), line["prob"] = r.prob.at(0);
    } else {
      line["index"] = r.index, line["label"] = r.label, line["prob"] = r.prob;
    }
    text += line.dump() + "\n";
  }
  return text;
}

}  // namespace

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> image_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  auto add = [&files](const std::string& path) {
    if (fs::is_directory(path)) {
      const auto found = images_under(path);
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  };
  for (const std::string& arg : args) {
    std::error_code ec;
    if (fs::exists(arg, ec)) {
      add(arg);
    } else if (arg.find_first_of("*?[") != std::string::npos) {
      for (const std::string& path : glob_matches(arg)) add(path);
    } else {
      throw RecipeError("predict: " + arg + ": no such file or folder");
    }
  }
  return files;
}

void check_results_file(const std::string& path) {
  const fs::path file(path);
  if (file.extension() != ".csv" && file.extension() != ".jsonl")
    throw RecipeError("predict: --output " + path + ": expected a .csv or .jsonl file");
  if (!file.parent_path().empty() && !fs::is_directory(file.parent_path()))
    throw RecipeError("predict: --output " + path + ": no such folder " + file.parent_path().string());
}

void write_results(const std::string& path, const std::vector<TopK>& rows, int64_t k) {
  write_file_atomic(path, fs::path(path).extension() == ".csv" ? csv_text(rows, k) : jsonl_text(rows, k));
}

}  // namespace trainrun::cli
