#include "components/data/sources/webdataset_sidecars.h"

#include "components/data/data_error.h"
#include "components/data/shards/shard_urls.h"
#include "support/download.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace trainrun::wds {

std::string parent_of(const std::string& url) {
  std::size_t slash = url.find_last_of('/');
  return slash == std::string::npos ? "" : url.substr(0, slash + 1);
}

std::string base_name(const std::string& url) { return url.substr(url.find_last_of('/') + 1); }

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, std::min(s.size(), s.find_first_not_of(ws)));
  return s;
}

namespace {

// A small file beside the shards (sizes.json, classes.txt), nullopt when it is not there.
std::optional<std::string> sidecar(const std::string& dir, const std::string& name, const OpenOptions& o) {
  std::string url = dir + name;
  if (!is_remote(url)) {
    std::string path = local_path(url);
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

}  // namespace

std::map<std::string, int64_t> shard_sizes(const std::string& dir, const OpenOptions& o) {
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

std::vector<std::string> classes_beside(const std::string& dir, const OpenOptions& o) {
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

}  // namespace trainrun::wds
