#include "components/data/shards/shard_urls.h"

#include <cstdlib>
#include <optional>
#include <regex>
#include <stdexcept>

namespace trainrun::wds {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_remote(const std::string& url) { return starts_with(url, "http://") || starts_with(url, "https://"); }

std::string local_path(const std::string& url) { return starts_with(url, "file://") ? url.substr(7) : url; }

namespace {

// The matching '}' of the '{' at `open`, nullopt when there is none.
std::optional<std::size_t> closing_brace(const std::string& s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::nullopt;
}

// The comma-separated parts of a group's inside, at depth 0.
std::vector<std::string> top_level_parts(const std::string& inner) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c == '\\' && i + 1 < inner.size()) {
      cur += c;
      cur += inner[++i];
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// braceexpand's ranges: {0..3}, {000..127} (zero padding to the longer bound when a bound has a
// leading zero), {10..0..2}, {a..e}; nullopt when `inner` is not a range.
std::optional<std::vector<std::string>> expand_range(const std::string& inner) {
  static const std::regex int_range(R"((-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?)");
  static const std::regex char_range(R"(([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?)");
  std::smatch m;
  std::vector<std::string> out;
  if (std::regex_match(inner, m, int_range)) {
    const std::string left = m[1], right = m[2];
    auto padded = [](const std::string& s) {
      return s != "0" && s != "-0" && (starts_with(s, "0") || starts_with(s, "-0"));
    };
    const std::size_t width = padded(left) || padded(right) ? std::max(left.size(), right.size()) : 0;
    long long a = std::stoll(left), b = std::stoll(right);
    long long step = m[3].matched ? std::llabs(std::stoll(m[3])) : 1;
    if (step == 0) step = 1;
    for (long long v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step) {
      std::string digits = std::to_string(std::llabs(v));
      std::string sign = v < 0 ? "-" : "";
      std::size_t w = width > sign.size() ? width - sign.size() : 0;
      if (digits.size() < w) digits.insert(0, w - digits.size(), '0');
      out.push_back(sign + digits);
    }
    return out;
  }
  if (std::regex_match(inner, m, char_range)) {
    char a = m[1].str()[0], b = m[2].str()[0];
    int step = m[3].matched ? std::abs(std::stoi(m[3])) : 1;
    if (step == 0) step = 1;
    for (int v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step) out.push_back(std::string(1, char(v)));
    return out;
  }
  return std::nullopt;
}

void brace_expand(const std::string& s, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] != '{') continue;
    auto close = closing_brace(s, i);
    if (!close) throw std::invalid_argument("'" + s + "': unbalanced '{'");
    const std::string prefix = s.substr(0, i), inner = s.substr(i + 1, *close - i - 1), rest = s.substr(*close + 1);
    std::vector<std::string> alternatives;
    if (auto range = expand_range(inner)) {
      alternatives = *range;
    } else {
      std::vector<std::string> parts = top_level_parts(inner);
      if (parts.size() < 2) {
        // "{x}" is left as it is, as braceexpand leaves it; the rest of the string is still expanded.
        std::vector<std::string> tails;
        brace_expand(rest, tails);
        std::vector<std::string> heads;
        brace_expand(inner, heads);
        for (const auto& h : heads)
          for (const auto& t : tails) out.push_back(prefix + "{" + h + "}" + t);
        return;
      }
      for (const auto& p : parts) brace_expand(p, alternatives);
    }
    std::vector<std::string> tails;
    brace_expand(rest, tails);
    for (const auto& a : alternatives)
      for (const auto& t : tails) out.push_back(prefix + a + t);
    return;
  }
  if (s.find('}') != std::string::npos) {
    // A '}' without its '{' (escaped ones aside) is unbalanced.
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
        continue;
      }
      if (s[i] == '}') throw std::invalid_argument("'" + s + "': unbalanced '}'");
    }
  }
  std::string plain;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}' || s[i + 1] == ',' || s[i + 1] == '\\'))
      ++i;
    plain += s[i];
  }
  out.push_back(plain);
}

// webdataset's envsubst: ${name} is the environment variable WDS_name, repeated while it changes
// (at most 10 times).
std::string envsubst(std::string s) {
  static const std::regex var(R"(\$\{(\w+)\})");
  for (int round = 0; round < 10; ++round) {
    std::string out;
    std::smatch m;
    std::string rest = s;
    while (std::regex_search(rest, m, var)) {
      std::string name = "WDS_" + m[1].str();
      const char* value = std::getenv(name.c_str());
      if (!value) throw std::invalid_argument("'" + s + "': ${" + m[1].str() + "} names $" + name + ", which is not set");
      out += m.prefix().str() + value;
      rest = m.suffix();
    }
    out += rest;
    if (out == s) break;
    s = out;
  }
  return s;
}
}  // namespace

std::vector<std::string> expand_urls(const std::string& pattern) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t sep = pattern.find("::", start);
    std::string part = pattern.substr(start, sep == std::string::npos ? std::string::npos : sep - start);
    brace_expand(envsubst(part), out);
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return out;
}

}  // namespace trainrun::wds
