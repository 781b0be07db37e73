// data.dataset: {name: webdataset}: a train and an eval split of WebDataset tar shards
// (components/data/shards/webdataset.h), each a WebDatasetSplit the loader reads as streams. The
// epoch's length is `num_samples`, or the sum of the shards' counts in a sizes.json or _info.json
// beside them; class names: `classes`, else classes.txt or labels.json beside the training shards
// (webdataset_sidecars.h).
#include "components/data/shards/webdataset.h"
#include "components/data/sources/image_files.h"
#include "components/data/sources/webdataset_sidecars.h"
#include "components/data/sources/webdataset_split.h"
#include "support/hf_hub.h"

#include <filesystem>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;
using wds::ShardSet;

// hf-hub:datasets/ORG/NAME[@REV]/PATH -> {HF_ENDPOINT}/datasets/ORG/NAME/resolve/REV/PATH.
std::string hub_shard_url(const std::string& spec, const std::string& where) {
  std::string rest = spec.substr(7);
  if (!wds::starts_with(rest, "datasets/"))
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
    for (std::string& u : expanded) urls.push_back(wds::starts_with(u, "hf-hub:") ? hub_shard_url(u, where) : u);
  }
  if (urls.empty()) throw DataError(where + ": no shard (an empty list)");
  // A local pattern that names no file is the usual typo: say which of the shards are missing.
  std::vector<std::string> missing;
  for (const auto& u : urls)
    if (!wds::is_remote(u) && !fs::exists(wds::local_path(u))) missing.push_back(u);
  if (missing.size() == urls.size())
    throw DataError(where + ": no shard matches: none of the " + std::to_string(urls.size()) +
                    " files exists (the first: " + urls.front() + ")");
  if (!missing.empty())
    throw DataError(where + ": " + std::to_string(missing.size()) + " of " + std::to_string(urls.size()) +
                    " shards do not exist (the first: " + missing.front() + ")");
  return urls;
}

// One split's shards and epoch length; `num_samples` 0 = from sizes.json / _info.json.
std::shared_ptr<ShardSet> shard_set(const Config& c, const std::string& key, int64_t num_samples,
                                    const wds::OpenOptions& open) {
  auto set = std::make_shared<ShardSet>();
  set->what = c.path() + "." + key;
  set->urls = shard_urls(c, key);
  set->open = open;
  set->image_key = c.get<std::string>("image_key", "");
  set->label_key = c.get<std::string>("label_key", "");
  set->multilabel = c.get<bool>("multilabel", false);
  set->channels = channels(c);
  const YAML::Node shuffle = c.node()["shuffle"];
  set->shuffle_shards = shuffle["shards"] ? shuffle["shards"].as<bool>() : true;
  set->buffer = shuffle["buffer"] ? shuffle["buffer"].as<int64_t>() : 2000;
  // Counts from beside the shards: every shard needs one for the sum to be the epoch.
  std::map<std::string, std::map<std::string, int64_t>> by_dir;
  int64_t known = 0;
  bool all_known = true;
  for (const auto& u : set->urls) {
    std::string dir = wds::parent_of(u);
    if (!by_dir.count(dir)) by_dir[dir] = wds::shard_sizes(dir, open);
    auto it = by_dir[dir].find(wds::base_name(u));
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
    for (const auto& p : string_list(c, key)) hub |= wds::starts_with(p, "hf-hub:");
  if (hub) {
    if (hub_offline())
      throw DataError(c.path() + ": hf-hub: shards are read from the Hub, and HF_HUB_OFFLINE is set; download them "
                                 "and name the files instead");
    if (std::string tok = hub_token(); !tok.empty()) open.headers.push_back("Authorization: Bearer " + tok);
  }
  auto train = shard_set(c, "urls", c.get<int64_t>("num_samples", 0), open);
  if (train->num_samples == 0)
    throw DataError(c.path() + ".num_samples: not given, and no sizes.json or _info.json beside the shards (" +
                    wds::parent_of(train->urls.front()) + ") counts them all; set num_samples, the epoch's length");
  auto eval = shard_set(c, "eval_urls", 0, open);
  eval->buffer = 0;

  DatasetSplits out;
  out.eval_split_name = c.get<std::string>("eval_split_name");
  if (!c.is_null("classes")) {
    out.classes = c.get<std::vector<std::string>>("classes");
  } else {
    out.classes = wds::classes_beside(wds::parent_of(train->urls.front()), open);
    if (out.classes.empty())
      throw DataError(c.path() + ".classes: not given, and no classes.txt or labels.json beside the shards (" +
                      wds::parent_of(train->urls.front()) + ")");
  }
  const int64_t n = int64_t(out.classes.size());
  out.train = std::make_shared<WebDatasetSplit>(train, n);
  out.eval = std::make_shared<WebDatasetSplit>(eval, n);
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
                           "the label field (text) or json key; empty = cls, label, then json's label (multilabel: "
                           "json's labels, label, cls)")
                      .add("multilabel", Type::Bool, yaml("false"),
                           "a set of labels per sample (train.task: multilabel): a json list of class indices "
                           "({\"labels\": [3, 7]}, as trainrun shards writes), or indices in a text field (\"3 7\")")
                      .add("cache_dir", Type::Path, YAML::Node(), "remote shards downloaded here whole first; null = streamed")
                      .nullable()
                      .add("retries", Type::Int, yaml("3"), "HTTP reconnections per shard (a Range request from the last byte)")
                      .min(0)
                      .add("eval_split_name", Type::String, YAML::Node("validation"), "the eval split's name in logs")
                      .add("channels", Type::Int, yaml("3"), "3 = RGB, 1 = grayscale (PIL convert('L'))")
                      .range(1, 3),
                  make_webdataset);

}  // namespace trainrun
