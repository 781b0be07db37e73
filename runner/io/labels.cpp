#include "runner/io/labels.h"

#include "components/data/dataset.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace trainrun {

namespace fs = std::filesystem;

std::vector<std::string> labels_of(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || j.empty()) throw DataError(file + ": not a labels file: expected {\"0\": \"class name\", ...}");
  std::vector<std::string> labels(j.size());
  std::vector<bool> seen(j.size());
  for (auto& [index, name] : j.items()) {
    const bool digits = !index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos;
    const std::size_t i = digits ? std::stoul(index) : labels.size();
    if (i >= labels.size() || seen[i])
      throw DataError(file + ": not a labels file: key '" + index + "' is not a class index from 0 to " +
                      std::to_string(labels.size() - 1) + " (each once)");
    if (!name.is_string()) throw DataError(file + ": not a labels file: the name of class " + index + " is not a string");
    labels[i] = name.get<std::string>();
    seen[i] = true;
  }
  return labels;
}

std::vector<std::string> run_labels(const std::string& weights) {
  fs::path dir = fs::path(weights).parent_path();
  for (const fs::path& candidate : {dir / "labels.json", dir.parent_path() / "labels.json"}) {
    if (!fs::is_regular_file(candidate)) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(std::ifstream(candidate));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(candidate.string() + ": not a labels file: " + e.what());
    }
    return labels_of(j, candidate.string());
  }
  return {};
}

}  // namespace trainrun
