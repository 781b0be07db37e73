#include "components/data/sources/webdataset_split.h"

#include "components/data/image.h"
#include "components/data/sources/webdataset_sidecars.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

using wds::RawSample;

namespace {

const std::vector<std::string> kImageFields = {"jpg", "jpeg", "png", "webp", "bmp", "ppm", "pgm", "tif", "tiff"};

std::string fields_of(const RawSample& s) {
  std::string out;
  for (const auto& [f, _] : s.fields) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "none" : out;
}

std::optional<int64_t> parse_label(const std::string& text) {
  std::string t = wds::trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

}  // namespace

Example WebDatasetSplit::from_sample(const RawSample& s, const RegionPicker* pick) const {
  const std::string* field = nullptr;
  std::string name;
  if (!set_->image_key.empty()) {
    auto it = s.fields.find(set_->image_key);
    if (it != s.fields.end()) field = &it->second, name = it->first;
  } else {
    for (const auto& f : kImageFields)
      if (auto it = s.fields.find(f); it != s.fields.end()) {
        field = &it->second, name = f;
        break;
      }
  }
  const std::string what = s.url + ": sample '" + s.key + "'";
  if (!field)
    throw UnreadableFile(what + ": no image (" +
                         (set_->image_key.empty() ? "jpg, jpeg, png, webp or bmp" : "image_key " + set_->image_key) +
                         "); its fields: " + fields_of(s));
  std::vector<unsigned char> bytes(field->begin(), field->end());
  RegionPicker whole = [](int64_t h, int64_t w) { return CropBox{0, 0, h, w}; };
  Example ex;
  ex.image = decode_image_bytes(bytes, what + "." + name, set_->channels, pick ? *pick : whole);
  if (set_->multilabel) {
    ex.labels = labels_of(s);
    ex.label = ex.labels.front();
  } else {
    ex.label = label_of(s);
  }
  return ex;
}

int64_t WebDatasetSplit::label_of(const RawSample& s) const {
  const std::string what = s.url + ": sample '" + s.key + "'";
  std::optional<int64_t> label;
  const std::string& key = set_->label_key;
  std::vector<std::string> fields = key.empty() ? std::vector<std::string>{"cls", "label"} : std::vector<std::string>{key};
  for (const auto& f : fields) {
    auto it = s.fields.find(f);
    if (it == s.fields.end()) continue;
    label = parse_label(it->second);
    if (!label) throw UnreadableFile(what + "." + f + ": '" + wds::trim(it->second.substr(0, 40)) + "' is not an integer label");
    break;
  }
  if (!label) {
    if (auto it = s.fields.find("json"); it != s.fields.end()) {
      nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      for (const auto& k : key.empty() ? std::vector<std::string>{"label", "cls"} : std::vector<std::string>{key})
        if (j.is_object() && j.contains(k) && j[k].is_number_integer()) {
          label = j[k].get<int64_t>();
          break;
        }
    }
  }
  if (!label)
    throw UnreadableFile(what + ": no label (" +
                         (key.empty() ? std::string("a cls or label field, or a json field's \"label\"")
                                      : "a " + key + " field, or a json field's \"" + key + "\"") +
                         "); its fields: " + fields_of(s));
  if (*label < 0 || *label >= num_classes_)
    throw DataError(what + ": label " + std::to_string(*label) + " is outside the " + std::to_string(num_classes_) +
                    " classes (0 to " + std::to_string(num_classes_ - 1) + ")");
  return *label;
}

namespace {

// Class indices in a text field: "3 7", "3,7" or "3, 7"; none when some part is not an integer.
std::optional<std::vector<int64_t>> parse_labels(const std::string& text) {
  std::vector<int64_t> out;
  std::string part;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const char ch = i < text.size() ? text[i] : ' ';
    if (ch != ',' && !std::isspace(static_cast<unsigned char>(ch))) {
      part += ch;
      continue;
    }
    if (part.empty()) continue;
    auto v = parse_label(part);
    if (!v) return std::nullopt;
    out.push_back(*v);
    part.clear();
  }
  return out;
}

}  // namespace

std::vector<int64_t> WebDatasetSplit::labels_of(const RawSample& s) const {
  const std::string what = s.url + ": sample '" + s.key + "'";
  const std::string& key = set_->label_key;
  std::optional<std::vector<int64_t>> labels;
  for (const auto& f : key.empty() ? std::vector<std::string>{"cls", "label"} : std::vector<std::string>{key}) {
    auto it = s.fields.find(f);
    if (it == s.fields.end()) continue;
    labels = parse_labels(it->second);
    if (!labels)
      throw UnreadableFile(what + "." + f + ": '" + wds::trim(it->second.substr(0, 40)) + "' is not a list of integer labels");
    break;
  }
  auto it = s.fields.find("json");
  if (!labels && it != s.fields.end()) {
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    for (const auto& k : key.empty() ? std::vector<std::string>{"labels", "label", "cls"} : std::vector<std::string>{key}) {
      if (!j.is_object() || !j.contains(k)) continue;
      const nlohmann::json& v = j[k];
      const bool ints = v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); });
      if (!ints && !v.is_number_integer())
        throw UnreadableFile(what + ".json: \"" + k + "\" is " + v.dump().substr(0, 40) + ", not a list of integer labels");
      labels = v.is_array() ? v.get<std::vector<int64_t>>() : std::vector<int64_t>{v.get<int64_t>()};
      break;
    }
  }
  if (!labels || labels->empty())
    throw UnreadableFile(what + ": no label (" +
                         (key.empty() ? std::string("a cls or label field, or a json field's \"labels\"")
                                      : "a " + key + " field, or a json field's \"" + key + "\"") +
                         (labels ? " holds an empty list" : "") + "); its fields: " + fields_of(s));
  std::sort(labels->begin(), labels->end());
  labels->erase(std::unique(labels->begin(), labels->end()), labels->end());
  if (labels->front() < 0 || labels->back() >= num_classes_)
    throw DataError(what + ": label " + std::to_string(labels->front() < 0 ? labels->front() : labels->back()) +
                    " is outside the " + std::to_string(num_classes_) + " classes (0 to " +
                    std::to_string(num_classes_ - 1) + ")");
  return *labels;
}

RawSample WebDatasetSplit::nth(std::size_t i) const {
  std::size_t seen = 0;
  for (const auto& url : set_->urls) {
    try {
      wds::ShardReader reader(url, 0, set_->open);
      while (auto s = reader.next())
        if (seen++ == i) return std::move(*s);
    } catch (const wds::ShardError& e) {
      throw UnreadableFile(e.what());
    }
  }
  throw DataError(set_->what + ": fewer than " + std::to_string(i + 1) + " samples in the shards");
}

}  // namespace trainrun
