// WebDataset's grouping and field rules, against webdataset itself: tests/py/webdataset_ref.py makes
// tar shards with odd names (Python's tarfile only), and tests/data/webdataset/expected.json is what
// webdataset e0953f9's own tarfile_samples, base_plus_ext, tar_file_iterator and expand_urls gave on
// them (the script's docstring says how to rerun it). Nothing here is our own idea of the rules.
#include "components/data/shards/webdataset.h"
#include "support/download.h"

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace trainrun::wds_grouping_test {

using nlohmann::json;

const json& expected() {
  static const json doc = json::parse(test::read_file(test::source("tests/data/webdataset/expected.json")));
  return doc;
}

// The fixture shards in a fresh folder, as `webdataset_ref.py make` writes them.
struct Shards {
  test::TempDir dir;
  Shards() {
    test::RunResult r = test::run(std::string(test::kPython) + " " + test::source("tests/py/webdataset_ref.py") +
                                  " make " + dir.path().string());
    EXPECT_EQ(r.code, 0) << r.err;
  }
  std::string url(const std::string& shard) const { return dir / shard; }
  std::vector<std::string> urls(const json& shards) const {
    std::vector<std::string> out;
    for (const auto& s : shards) out.push_back(url(s.get<std::string>()));
    return out;
  }
};

std::string hex(const std::string& bytes) {
  std::string out;
  char b[3];
  for (unsigned char c : bytes) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

bool printable(const std::string& bytes) {
  for (unsigned char c : bytes)
    if (c < 32 || c >= 127) return false;
  return true;
}

// A field's bytes as the JSON writes them: "text" when printable ASCII, else "hex".
std::string shown(const std::string& bytes) { return printable(bytes) ? "\"" + bytes + "\"" : hex(bytes); }

std::string shown(const json& field) {
  return field.contains("text") ? "\"" + field["text"].get<std::string>() + "\"" : field["hex"].get<std::string>();
}

// One sample on one line, the same way for both sides, so that a mismatch prints as a diff:
// key, shard (relative to the fixture folder) and each field with its bytes, in name order.
std::string line(const wds::RawSample& s, const Shards& shards) {
  std::string url = s.url;
  const std::string prefix = shards.dir.path().string() + "/";
  if (url.rfind(prefix, 0) == 0) url = url.substr(prefix.size());
  std::string out = "key=\"" + s.key + "\" url=" + url;
  for (const auto& [name, bytes] : s.fields) out += " " + name + "=" + shown(bytes);
  return out;
}

std::string line(const json& s) {
  std::string out = "key=\"" + s["__key__"].get<std::string>() + "\" url=" + s["__url__"].get<std::string>();
  std::map<std::string, std::string> fields;  // __key__ and __url__ are strings; fields, objects
  for (const auto& [name, value] : s.items())
    if (value.is_object()) fields[name] = shown(value);
  for (const auto& [name, bytes] : fields) out += " " + name + "=" + bytes;
  return out;
}

std::vector<std::string> lines(const std::vector<wds::RawSample>& samples, const Shards& shards) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(line(s, shards));
  return out;
}

std::vector<std::string> lines(const json& samples) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(line(s));
  return out;
}

// The cases of one group, each read with read_samples and compared sample by sample.
int expect_group_read_as_webdataset(const std::string& group) {
  Shards shards;
  int n = 0;
  for (const auto& c : expected()["cases"]) {
    if (c["group"] != group) continue;
    ++n;
    std::vector<wds::RawSample> got;
    try {
      got = wds::read_samples(shards.urls(c["shards"]));
    } catch (const std::exception& e) {
      ADD_FAILURE() << c["name"] << ": " << e.what();
      continue;
    }
    EXPECT_EQ(lines(got, shards), lines(c["samples"])) << "case " << c["name"] << " " << c["shards"].dump()
                                                       << " (left: ours, right: webdataset)";
  }
  return n;
}

// The shards webdataset read are the ones `make` writes here (Python's tarfile, fixed mtime/owner).
TEST(WebDatasetGrouping, FixtureShardsAreTheOnesWebdatasetRead) {
  Shards shards;
  for (const auto& [name, sha] : expected()["shards"].items())
    EXPECT_EQ(file_sha256(shards.url(name)), sha.get<std::string>()) << name;
}

// Dots in directories, several and upper-case extensions, "./" names, GNU and PAX long names,
// non-ASCII names, pax global headers; non-regular members, metadata and names without a dot in
// the middle of a sample neither join nor end it; a key seen again later is a new sample.
TEST(WebDatasetGrouping, OddNamesGroupAsWebdataset) { EXPECT_GT(expect_group_read_as_webdataset("names"), 0); }

// The same key at the end of one shard and the start of the next: two samples.
TEST(WebDatasetGrouping, SampleSplitAcrossTwoShardsIsTwoSamples) {
  EXPECT_GT(expect_group_read_as_webdataset("split"), 0);
}

// tarfile "r|*" reads a gzip-compressed shard as its tar.
TEST(WebDatasetGrouping, GzipShardReadsAsItsTar) { EXPECT_GT(expect_group_read_as_webdataset("gzip"), 0); }

// Fields named as webdataset's own sample keys: __local_path__ is a field; a non-empty __bad__
// drops its sample (valid_sample), an empty one does not; a key "__key__" is an ordinary key.
TEST(WebDatasetGrouping, ReservedFieldNamesAsWebdataset) {
  EXPECT_GT(expect_group_read_as_webdataset("reserved"), 0);
}

// A field twice in one sample (after lower-casing, or one named __key__ / __url__) is an error
// naming the shard and the member; the samples before it come through as webdataset yields them.
TEST(WebDatasetGrouping, DuplicateFieldIsAnErrorNamingTheShardAndMember) {
  Shards shards;
  int n = 0;
  for (const auto& c : expected()["cases"]) {
    if (c["group"] != "error") continue;
    ++n;
    const json& want = c["error"];
    const std::string shard = shards.url(want["shard"]);
    std::string err = "(no error)";
    try {
      wds::read_samples(shards.urls(c["shards"]));
    } catch (const wds::ShardError& e) {
      err = e.what();
    } catch (const std::exception& e) {
      err = std::string("(not a ShardError) ") + e.what();
    }
    EXPECT_NE(err, "(no error)") << c["name"] << ": webdataset raised " << want["class"] << ": " << want["message"];
    EXPECT_NE(err.find(shard), std::string::npos) << c["name"] << ": " << err << " does not name " << shard;
    EXPECT_NE(err.find(want["member"].get<std::string>()), std::string::npos)
        << c["name"] << ": " << err << " does not name the member " << want["member"] << " as webdataset's "
        << want["message"] << " does";

    // Shard by shard: what a reader returned before it threw is what webdataset yielded before.
    std::vector<wds::RawSample> before;
    bool threw = false;
    for (const auto& url : shards.urls(c["shards"])) {
      try {
        wds::ShardReader reader(url);
        while (auto s = reader.next()) before.push_back(*s);
      } catch (const std::exception&) {
        threw = true;
        break;
      }
    }
    EXPECT_TRUE(threw) << c["name"];
    EXPECT_EQ(lines(before, shards), lines(c["samples"])) << "case " << c["name"] << " " << c["shards"].dump()
                                                          << " (left: ours, right: webdataset)";
  }
  EXPECT_GT(n, 0);
}

TEST(WebDatasetGrouping, BasePlusExtAsWebdataset) {
  for (const auto& [name, want] : expected()["base_plus_ext"].items()) {
    auto got = wds::base_plus_ext(name);
    if (want.is_null()) {
      EXPECT_FALSE(got) << "\"" << name << "\" -> [\"" << got->first << "\", \"" << got->second
                        << "\"], webdataset: (None, None)";
    } else {
      EXPECT_TRUE(got) << "\"" << name << "\" -> nullopt, webdataset: " << want.dump();
      if (got) {
        EXPECT_EQ(json::array({got->first, got->second}), want) << "\"" << name << "\"";
      }
    }
  }
}

TEST(WebDatasetGrouping, IsMetaAsTarFileIterator) {
  for (const auto& [name, want] : expected()["is_meta"].items())
    EXPECT_EQ(wds::is_meta(name), want.get<bool>()) << "\"" << name << "\" (true: tar_file_iterator leaves it out)";
}

// braceexpand's ranges (zero padding, steps, both directions, letters), lists, nesting, escapes and
// "::"; an unbalanced brace is std::invalid_argument where braceexpand raises UnbalancedBracesError.
TEST(WebDatasetGrouping, ExpandUrlsAsWebdataset) {
  for (const auto& [pattern, want] : expected()["expand_urls"].items()) {
    if (want.contains("error")) {
      std::string got = "(no error)";
      try {
        got = json(wds::expand_urls(pattern)).dump();
      } catch (const std::invalid_argument&) {
        continue;
      } catch (const std::exception& e) {
        got = std::string("(not std::invalid_argument) ") + e.what();
      }
      ADD_FAILURE() << "\"" << pattern << "\" -> " << got << ", webdataset: " << want["error"].dump();
      continue;
    }
    std::vector<std::string> got;
    try {
      got = wds::expand_urls(pattern);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "\"" << pattern << "\" -> " << e.what() << ", webdataset: " << want["urls"].dump();
      continue;
    }
    EXPECT_EQ(json(got), want["urls"]) << "\"" << pattern << "\"";
  }
}

// ${NAME} is $WDS_NAME, substituted again while it changes, before the braces; an unset one is an
// error (webdataset's AssertionError).
TEST(WebDatasetGrouping, ExpandUrlsSubstitutesWdsVariablesAsWebdataset) {
  std::map<std::string, std::optional<std::string>> saved;  // every variable a case sets, as it was
  for (const auto& c : expected()["expand_urls_env"])
    for (const auto& [name, value] : c["env"].items())
      saved[name] = std::getenv(name.c_str()) ? std::optional<std::string>(std::getenv(name.c_str())) : std::nullopt;
  int n = 0;
  for (const auto& c : expected()["expand_urls_env"]) {
    ++n;
    for (const auto& [name, value] : saved) ::unsetenv(name.c_str());
    for (const auto& [name, value] : c["env"].items()) ::setenv(name.c_str(), value.get<std::string>().c_str(), 1);
    const std::string pattern = c["pattern"];
    std::string got;
    try {
      got = json(wds::expand_urls(pattern)).dump();
    } catch (const std::exception& e) {
      got = std::string("(error) ") + e.what();
    }
    if (c.contains("error")) {
      EXPECT_EQ(got.rfind("(error) ", 0), 0u) << "\"" << pattern << "\" with " << c["env"].dump() << " -> " << got
                                             << ", webdataset: " << c["error"].dump();
    } else {
      EXPECT_EQ(got, c["urls"].dump()) << "\"" << pattern << "\" with " << c["env"].dump();
    }
  }
  for (const auto& [name, value] : saved) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  EXPECT_GT(n, 0);
}

}  // namespace trainrun::wds_grouping_test
