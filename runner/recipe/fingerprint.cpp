#include "runner/recipe/fingerprint.h"

#include <cerrno>
#include <cstdlib>

namespace trainrun {

namespace {

using nlohmann::ordered_json;

// The sections of the fingerprint; for `data` and `train` the keys that are not part of it (data)
// or the only ones that are (train).
constexpr const char* kSections[] = {"seed", "model", "data", "optimizer", "scheduler", "freeze", "train"};
// global_batch_size with batch_size: the product the fingerprint keeps (job_fingerprint) is what counts.
constexpr const char* kDataLeftOut[] = {"batch_size", "global_batch_size", "eval_batch_size", "workers", "on_bad_file",
                                        "max_eval_samples"};
// data.dataset's keys about fetching the data, not what it is.
constexpr const char* kDatasetLeftOut[] = {"download", "cache_dir", "retries", "eval_split_name"};
constexpr const char* kTrainKept[] = {"loss", "max_grad_norm", "bn_eval", "unfreeze_at_epoch", "ema"};

// A YAML scalar as the number, boolean or null it means, so that 1.0e-3 and 0.001 are one value.
ordered_json json_scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted in the recipe: a string, whatever it looks like
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (!s.empty()) {
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (*end == '\0' && errno == 0) return int64_t(i);
    const double d = std::strtod(s.c_str(), &end);
    if (*end == '\0') return d;
  }
  return s;
}

ordered_json to_json(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsScalar()) return json_scalar(node);
  if (node.IsSequence()) {
    ordered_json out = ordered_json::array();
    for (const auto& item : node) out.push_back(to_json(item));
    return out;
  }
  ordered_json out = ordered_json::object();
  for (auto it = node.begin(); it != node.end(); ++it) out[it->first.as<std::string>()] = to_json(it->second);
  return out;
}

template <std::size_t N>
bool listed(const char* const (&list)[N], const std::string& key) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

std::string shown(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void differences(const ordered_json* saved, const ordered_json* now, const std::string& path, std::vector<std::string>& out) {
  if (saved && now && *saved == *now) return;
  if (saved && now && saved->is_object() && now->is_object()) {
    for (auto it = now->begin(); it != now->end(); ++it) {
      const std::string key = path.empty() ? it.key() : path + "." + it.key();
      differences(saved->contains(it.key()) ? &(*saved)[it.key()] : nullptr, &it.value(), key, out);
    }
    for (auto it = saved->begin(); it != saved->end(); ++it)
      if (!now->contains(it.key())) differences(&it.value(), nullptr, path.empty() ? it.key() : path + "." + it.key(), out);
    return;
  }
  if (saved && now && saved->is_array() && now->is_array() && saved->size() == now->size()) {
    for (std::size_t i = 0; i < now->size(); ++i) differences(&(*saved)[i], &(*now)[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  out.push_back(path + " " + (saved ? shown(*saved) : "(none)") + " -> " + (now ? shown(*now) : "(none)"));
}

}  // namespace

ordered_json recipe_fingerprint(const YAML::Node& root) {
  ordered_json out = ordered_json::object();
  for (const char* section : kSections) {
    ordered_json value = to_json(root[section]);
    if (std::string(section) == "data" && value.is_object()) {
      for (const char* key : kDataLeftOut) value.erase(key);
      // data.synthetic is the job only when on: a run of the data path keeps the fingerprint it
      // had before the key existed, so its older checkpoints still resume.
      if (value.contains("synthetic") && value["synthetic"] == false) value.erase("synthetic");
      if (value["dataset"].is_object())
        for (const char* key : kDatasetLeftOut) value["dataset"].erase(key);
    } else if (std::string(section) == "train" && value.is_object()) {
      ordered_json kept = ordered_json::object();
      for (auto it = value.begin(); it != value.end(); ++it)
        if (listed(kTrainKept, it.key())) kept[it.key()] = it.value();
      value = kept;
    }
    out[section] = value;
  }
  return out;
}

ordered_json job_fingerprint(const ordered_json& recipe, int64_t batch_size, int64_t world_size, int64_t grad_accum_steps) {
  ordered_json out = recipe;
  out["global_batch_size"] = batch_size * world_size * grad_accum_steps;
  return out;
}

std::vector<std::string> fingerprint_differences(const ordered_json& saved, const ordered_json& now) {
  std::vector<std::string> out;
  differences(&saved, &now, "", out);
  return out;
}

}  // namespace trainrun
