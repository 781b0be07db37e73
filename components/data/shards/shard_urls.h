// The URL lists of webdataset's shardlists.py: a pattern expanded to its shards' URLs, and what
// kind of place a URL names (gopen's schemes: http(s) is read over the network, a path or
// file:// from disk).
#pragma once

#include <string>
#include <vector>

namespace trainrun::wds {

// The shard URLs of one pattern, as webdataset's expand_urls: split on "::", then each part
// brace-expanded as braceexpand does ("{000000..000127}" keeps the zero padding, "{a,b}" lists,
// several groups multiply). Throws std::invalid_argument on an unbalanced brace.
std::vector<std::string> expand_urls(const std::string& pattern);

bool starts_with(const std::string& s, const char* prefix);
bool ends_with(const std::string& s, const std::string& suffix);

// Whether the shard is read over HTTP(S).
bool is_remote(const std::string& url);

// The file a local URL names: a path, or file://PATH.
std::string local_path(const std::string& url);

}  // namespace trainrun::wds
