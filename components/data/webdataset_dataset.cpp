// data.dataset: {name: webdataset}: a train and an eval split of WebDataset tar shards
// (components/data/webdataset.h), read as streams by the loader (shard_stream.h). The epoch's
// length is `num_samples`, or the sum of the shards' counts in a sizes.json (OpenCLIP's
// {shard file name: samples}) or _info.json (timm's reader_wds: splits.*.filenames and
// shard_lengths) beside them. Class names: `classes`, else classes.txt (one per line) or
// labels.json (a list, or {"0": name, ...}) beside the training shards.
#include "components/data/dataset.h"
#include "components/data/image.h"
#include "components/data/image_files.h"
#include "components/data/shard_stream.h"
#include "components/data/webdataset.h"
#include "support/download.h"
#include "support/hf_hub.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using wds::RawSample;
using wds::ShardSet;

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// hf-hub:datasets/ORG/NAME[@REV]/PATH -> {HF_ENDPOINT}/datasets/ORG/NAME/resolve/REV/PATH.
std::string hub_shard_url(const std::string& spec, const std::string& where) {
  std::string rest = spec.substr(7);
  if (!starts_with(rest, "datasets/"))
    throw DataError(where + ": '" + spec + "': a Hub shard is hf-hub:datasets/ORG/NAME[@REVISION]/PATH");
  rest = rest.substr(9);
  std::size_t org_end = rest.find('/');
  std::size_t name_end = org_end == std::string::npos ? std::string::npos : rest.find('/', org_end + 1);
  if (name_end == std::string::npos || name_end + 1 >= rest.size())
    throw DataError(where + ": '" + spec + "': a Hub shard is hf-hub:datasets/ORG/NAME[@REVISION]/PATH");
  std::string repo = rest.substr(0, name_end), path = rest.substr(name_end + 1), revision = "main";
  if (auto at = repo.find('@'); at != std::string::npos) revision = repo.substr(at + 1), repo = repo.substr(0, at);
  return hub_endpoint() + "/datasets/" + repo + "/resolve/" + revision + "/" + path;
}

bool is_remote(const std::string& url) { return starts_with(url, "http://") || starts_with(url, "https://"); }

std::string parent_of(const std::string& url) {
  std::size_t slash = url.find_last_of('/');
  return slash == std::string::npos ? "" : url.substr(0, slash + 1);
}

std::string base_name(const std::string& url) { return url.substr(url.find_last_of('/') + 1); }

// A small file beside the shards (sizes.json, classes.txt), nullopt when it is not there.
std::optional<std::string> sidecar(const std::string& dir, const std::string& name, const wds::OpenOptions& o) {
  std::string url = dir + name;
  if (!is_remote(url)) {
    std::string path = starts_with(url, "file://") ? url.substr(7) : url;
    if (path.empty()) path = name;
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  try {
    HttpStream stream(url, o.headers, 0, int(o.retries));
    std::string out;
    char buf[1 << 16];
    while (std::size_t n = stream.read(buf, sizeof buf)) out.append(buf, n);
    return out;
  } catch (const DownloadError& e) {
    const std::string why = e.what();
    if (why.find("HTTP 404") != std::string::npos) return std::nullopt;
    const bool refused = why.find("HTTP 401") != std::string::npos || why.find("HTTP 403") != std::string::npos;
    throw DataError("cannot read " + name + " beside the shards: " + why +
                    (refused ? (o.headers.empty() ? "; if the repository is gated or private, set HF_TOKEN"
                                                  : "; the token (HF_TOKEN) has no access to it")
                             : ""));
  }
}

// The shard counts a sizes.json or _info.json beside the shards gives, by file name.
std::map<std::string, int64_t> shard_sizes(const std::string& dir, const wds::OpenOptions& o) {
  std::map<std::string, int64_t> out;
  try {
    if (auto text = sidecar(dir, "sizes.json", o)) {
      const nlohmann::json j = nlohmann::json::parse(*text);  // items() refers to it: not a temporary
      for (const auto& item : j.items()) out[item.key()] = item.value().get<int64_t>();
      return out;
    }
    if (auto text = sidecar(dir, "_info.json", o)) {
      auto j = nlohmann::json::parse(*text);
      for (const auto& split : j.at("splits").items()) {
        const auto& files = split.value().at("filenames");
        const auto& lengths = split.value().at("shard_lengths");
        for (std::size_t i = 0; i < files.size() && i < lengths.size(); ++i)
          out[files[i].get<std::string>()] = lengths[i].get<int64_t>();
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(dir + "sizes.json / _info.json: not what OpenCLIP or timm write: " + e.what());
  }
  return out;
}

std::vector<std::string> string_list(const Config& c, const std::string& key) {
  const YAML::Node& n = c.node()[key];
  std::vector<std::string> out;
  if (n.IsScalar()) out.push_back(n.as<std::string>());
  if (n.IsSequence())
    for (const auto& item : n) out.push_back(item.as<std::string>());
  return out;
}

// Every shard of `key`'s patterns, hf-hub: ones resolved.
std::vector<std::string> shard_urls(const Config& c, const std::string& key) {
  const std::string where = c.path() + "." + key;
  std::vector<std::string> urls;
  for (const std::string& pattern : string_list(c, key)) {
    std::vector<std::string> expanded;
    try {
      expanded = wds::expand_urls(pattern);
    } catch (const std::invalid_argument& e) {
      throw DataError(where + ": " + e.what());
    }
    for (std::string& u : expanded) urls.push_back(starts_with(u, "hf-hub:") ? hub_shard_url(u, where) : u);
  }
  if (urls.empty()) throw DataError(where + ": no shard (an empty list)");
  // A local pattern that names no file is the usual typo: say which of the shards are missing.
  std::vector<std::string> missing;
  for (const auto& u : urls)
    if (!is_remote(u) && !fs::exists(starts_with(u, "file://") ? u.substr(7) : u)) missing.push_back(u);
  if (missing.size() == urls.size())
    throw DataError(where + ": no shard matches: none of the " + std::to_string(urls.size()) +
                    " files exists (the first: " + urls.front() + ")");
  if (!missing.empty())
    throw DataError(where + ": " + std::to_string(missing.size()) + " of " + std::to_string(urls.size()) +
                    " shards do not exist (the first: " + missing.front() + ")");
  return urls;
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, std::min(s.size(), s.find_first_not_of(ws)));
  return s;
}

std::vector<std::string> classes_beside(const std::string& dir, const wds::OpenOptions& o) {
  std::vector<std::string> names;
  if (auto text = sidecar(dir, "classes.txt", o)) {
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);)
      if (!trim(line).empty()) names.push_back(trim(line));
    return names;
  }
  if (auto text = sidecar(dir, "labels.json", o)) {
    try {
      auto j = nlohmann::json::parse(*text);
      if (j.is_array()) return j.get<std::vector<std::string>>();
      names.resize(j.size());
      for (const auto& item : j.items()) names.at(std::stoul(item.key())) = item.value().get<std::string>();
      return names;
    } catch (const std::exception& e) {
      throw DataError(dir + "labels.json: not a list of class names or {\"0\": name, ...}: " + e.what());
    }
  }
  return names;
}

const std::vector<std::string> kImageFields = {"jpg", "jpeg", "png", "webp", "bmp", "ppm", "pgm", "tif", "tiff"};

std::string fields_of(const RawSample& s) {
  std::string out;
  for (const auto& [f, _] : s.fields) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "none" : out;
}

std::optional<int64_t> parse_label(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

class ShardSplit : public Dataset {
 public:
  ShardSplit(std::shared_ptr<ShardSet> set, int64_t num_classes) : set_(std::move(set)), num_classes_(num_classes) {}
  std::size_t size() const override { return std::size_t(set_->num_samples); }
  const wds::ShardSet* shards() const override { return set_.get(); }

  // By position in the shards' own order: read from the first shard on (preflight's first
  // example, `check`); the loader reads streams, not this.
  Example get(std::size_t i) const override { return decode(nth(i), nullptr); }
  Example get_region(std::size_t i, const RegionPicker& pick) const override { return decode(nth(i), &pick); }
  int64_t label(std::size_t i) const override { return label_of(nth(i)); }
  Example from_sample(const RawSample& s, const RegionPicker* pick) const override { return decode(s, pick); }

  Example decode(const RawSample& s, const RegionPicker* pick) const {
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
    ex.label = label_of(s);
    return ex;
  }

  int64_t label_of(const RawSample& s) const {
    const std::string what = s.url + ": sample '" + s.key + "'";
    std::optional<int64_t> label;
    const std::string& key = set_->label_key;
    std::vector<std::string> fields = key.empty() ? std::vector<std::string>{"cls", "label"} : std::vector<std::string>{key};
    for (const auto& f : fields) {
      auto it = s.fields.find(f);
      if (it == s.fields.end()) continue;
      label = parse_label(it->second);
      if (!label) throw UnreadableFile(what + "." + f + ": '" + trim(it->second.substr(0, 40)) + "' is not an integer label");
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

 private:
  RawSample nth(std::size_t i) const {
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

  std::shared_ptr<ShardSet> set_;
  int64_t num_classes_;
};

// One split's shards and epoch length; `num_samples` 0 = from sizes.json / _info.json.
std::shared_ptr<ShardSet> shard_set(const Config& c, const std::string& key, int64_t num_samples,
                                    const wds::OpenOptions& open) {
  auto set = std::make_shared<ShardSet>();
  set->what = c.path() + "." + key;
  set->urls = shard_urls(c, key);
  set->open = open;
  set->image_key = c.get<std::string>("image_key", "");
  set->label_key = c.get<std::string>("label_key", "");
  set->channels = channels(c);
  const YAML::Node shuffle = c.node()["shuffle"];
  set->shuffle_shards = shuffle["shards"] ? shuffle["shards"].as<bool>() : true;
  set->buffer = shuffle["buffer"] ? shuffle["buffer"].as<int64_t>() : 2000;
  // Counts from beside the shards: every shard needs one for the sum to be the epoch.
  std::map<std::string, std::map<std::string, int64_t>> by_dir;
  int64_t known = 0;
  bool all_known = true;
  for (const auto& u : set->urls) {
    std::string dir = parent_of(u);
    if (!by_dir.count(dir)) by_dir[dir] = shard_sizes(dir, open);
    auto it = by_dir[dir].find(base_name(u));
    if (it == by_dir[dir].end()) {
      all_known = false;
      continue;
    }
    known += it->second;
    set->sizes.push_back(it->second);
  }
  if (!all_known) set->sizes.clear();
  if (num_samples > 0) {
    if (all_known && num_samples > known)
      throw DataError(c.path() + ".num_samples: " + std::to_string(num_samples) + " is more than the " +
                      std::to_string(known) + " samples in the " + std::to_string(set->urls.size()) +
                      " shards (their sizes.json says); an epoch would repeat samples");
    set->num_samples = num_samples;
  } else if (all_known) {
    set->num_samples = known;
  } else {
    set->num_samples = 0;  // the caller decides (training needs it; evaluation reads to the end)
  }
  return set;
}

void check_shuffle(const Config& c) {
  const YAML::Node shuffle = c.node()["shuffle"];
  if (!shuffle || shuffle.IsNull()) return;
  for (const auto& kv : shuffle) {
    std::string k = kv.first.as<std::string>();
    const std::string where = c.path() + ".shuffle." + k;
    try {
      if (k == "shards") {
        kv.second.as<bool>();
      } else if (k == "buffer") {
        if (kv.second.as<int64_t>() < 0) throw DataError(where + ": must be 0 or more");
      } else {
        throw DataError(where + ": unknown key (shuffle takes shards: true|false and buffer: N)");
      }
    } catch (const YAML::Exception&) {
      throw DataError(where + ": " + (k == "shards" ? "must be true or false" : "must be an integer"));
    }
  }
}

DatasetSplits make_webdataset(const Config& c) {
  check_shuffle(c);
  wds::OpenOptions open;
  open.cache_dir = c.get<std::string>("cache_dir", "");
  open.retries = c.get<int64_t>("retries");
  bool hub = false;
  for (const char* key : {"urls", "eval_urls"})
    for (const auto& p : string_list(c, key)) hub |= starts_with(p, "hf-hub:");
  if (hub) {
    if (hub_offline())
      throw DataError(c.path() + ": hf-hub: shards are read from the Hub, and HF_HUB_OFFLINE is set; download them "
                                 "and name the files instead");
    if (std::string tok = hub_token(); !tok.empty()) open.headers.push_back("Authorization: Bearer " + tok);
  }
  auto train = shard_set(c, "urls", c.get<int64_t>("num_samples", 0), open);
  if (train->num_samples == 0)
    throw DataError(c.path() + ".num_samples: not given, and no sizes.json or _info.json beside the shards (" +
                    parent_of(train->urls.front()) + ") counts them all; set num_samples, the epoch's length");
  auto eval = shard_set(c, "eval_urls", 0, open);
  eval->buffer = 0;

  DatasetSplits out;
  out.eval_split_name = c.get<std::string>("eval_split_name");
  if (!c.is_null("classes")) {
    out.classes = c.get<std::vector<std::string>>("classes");
  } else {
    out.classes = classes_beside(parent_of(train->urls.front()), open);
    if (out.classes.empty())
      throw DataError(c.path() + ".classes: not given, and no classes.txt or labels.json beside the shards (" +
                      parent_of(train->urls.front()) + ")");
  }
  const int64_t n = int64_t(out.classes.size());
  out.train = std::make_shared<ShardSplit>(train, n);
  out.eval = std::make_shared<ShardSplit>(eval, n);
  return out;
}

}  // namespace

TRAINRUN_REGISTER(Dataset, "webdataset",
                  "WebDataset tar shards, local, http(s) or hf-hub:datasets/..., read as streams (exact resume)",
                  Schema()
                      .required("urls", Type::StringList,
                                "training shards: a pattern (data/train-{000000..000127}.tar), a list, https://... "
                                "or hf-hub:datasets/ORG/NAME[@REV]/PATH")
                      .scalar_ok()
                      .required("eval_urls", Type::StringList, "evaluation shards, as urls")
                      .scalar_ok()
                      .add("num_samples", Type::Int, YAML::Node(),
                           "training samples per epoch (num_samples / world per rank); null = the shards' sizes.json")
                      .nullable()
                      .min(1)
                      .add("shuffle", Type::Map, yaml("{shards: true, buffer: 2000}"),
                           "training: shards = shard order drawn from seed + epoch; buffer = samples in the shuffle buffer")
                      .add("classes", Type::StringList, YAML::Node(), "class names in label order; null = classes.txt beside the shards")
                      .nullable()
                      .add("image_key", Type::String, YAML::Node(""), "the image field; empty = first of jpg jpeg png webp bmp")
                      .add("label_key", Type::String, YAML::Node(""),
                           "the label field (text) or json key; empty = cls, label, then json's label")
                      .add("cache_dir", Type::Path, YAML::Node(), "remote shards downloaded here whole first; null = streamed")
                      .nullable()
                      .add("retries", Type::Int, yaml("3"), "HTTP reconnections per shard (a Range request from the last byte)")
                      .min(0)
                      .add("eval_split_name", Type::String, YAML::Node("validation"), "the eval split's name in logs")
                      .add("channels", Type::Int, yaml("3"), "3 = RGB, 1 = grayscale (PIL convert('L'))")
                      .range(1, 3),
                  make_webdataset);

}  // namespace trainrun
