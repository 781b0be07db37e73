// The small files beside a split's shards that data.dataset: {name: webdataset} reads: the shard
// counts (OpenCLIP's sizes.json {shard file name: samples}, timm's reader_wds _info.json:
// splits.*.filenames and shard_lengths) and the class names (classes.txt, one per line, or
// labels.json, a list or {"0": name, ...}); local, or over HTTP(S) with the shards' headers.
#pragma once

#include "components/data/shards/shard_source.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainrun::wds {

// The folder part of a shard URL, with its trailing slash ("" for a bare file name).
std::string parent_of(const std::string& url);
// The shard's file name.
std::string base_name(const std::string& url);

// The shard counts a sizes.json or _info.json in `dir` gives, by file name; empty when there is neither.
std::map<std::string, int64_t> shard_sizes(const std::string& dir, const OpenOptions& o);

// The class names of classes.txt or labels.json in `dir`; empty when there is neither.
std::vector<std::string> classes_beside(const std::string& dir, const OpenOptions& o);

// `s` without its leading and trailing white space.
std::string trim(std::string s);

}  // namespace trainrun::wds
