#include "runner/io/thresholds.h"

#include "components/data/dataset.h"
#include "support/durable_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace trainrun {

namespace fs = std::filesystem;

std::string write_thresholds(const std::string& weights, const std::string& split, const std::vector<ClassThreshold>& t) {
  nlohmann::ordered_json out, thresholds = nlohmann::ordered_json::object(), f1 = nlohmann::ordered_json::object();
  for (const ClassThreshold& c : t) {
    thresholds[c.name] = c.threshold;
    f1[c.name] = c.f1 ? nlohmann::ordered_json(*c.f1) : nlohmann::ordered_json(nullptr);
  }
  out["weights"] = fs::path(weights).filename().string();
  out["split"] = split;
  out["criterion"] = "best F1 per class";
  out["thresholds"] = thresholds;
  out["f1"] = f1;
  const fs::path file = fs::path(weights).parent_path() / kThresholdsFile;
  write_file_atomic(file, out.dump(2) + "\n");
  return file.string();
}

std::optional<std::vector<double>> tuned_thresholds(const std::string& weights, const std::vector<std::string>& classes,
                                                    std::string* note) {
  const fs::path file = fs::path(weights).parent_path() / kThresholdsFile;
  if (!fs::is_regular_file(file)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::ifstream(file));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(file.string() + ": not a thresholds file: " + e.what());
  }
  if (!j.is_object() || !j.contains("thresholds") || !j["thresholds"].is_object() || !j.value("weights", nlohmann::json()).is_string())
    throw DataError(file.string() + ": not a thresholds file: expected {\"weights\": ..., \"thresholds\": {\"class name\": threshold, ...}}");
  const std::string tuned_for = j["weights"].get<std::string>();
  if (tuned_for != fs::path(weights).filename().string()) {
    if (note) *note = file.string() + " holds the thresholds of " + tuned_for + ", not of " + fs::path(weights).filename().string();
    return std::nullopt;
  }
  std::vector<double> out;
  for (const std::string& name : classes) {
    const nlohmann::json& v = j["thresholds"].contains(name) ? j["thresholds"][name] : nlohmann::json();
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw DataError(file.string() + ": thresholds: no threshold for class '" + name + "'");
    out.push_back(v.get<double>());
  }
  return out;
}

}  // namespace trainrun
