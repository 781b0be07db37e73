// A component's parameters, declared once: name, type, default and a one-line doc.
// The same declaration drives recipe validation, defaults, `trainrun describe` and the README.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainrun {

enum class Type { Int, Float, Bool, String, Path, IntList, FloatList, StringList, Map, List };

const char* type_name(Type t);

// A default written as YAML text, so `0.9` stays `0.9` in `describe` and resolved recipes.
inline YAML::Node yaml(const char* text) { return YAML::Load(text); }

struct Param {
  std::string name;
  Type type = Type::String;
  YAML::Node default_value;   // ignored when `required`
  std::string doc;
  bool required = false;
  bool nullable = false;      // `null` is a valid value (e.g. max_grad_norm: null)
  bool scalar_ok = false;     // a list type also accepts one scalar (size: 224)
  std::vector<std::string> choices;  // String: the allowed values; other types: allowed words (auto)
  std::optional<double> min, max;  // the valid range of a number (each item of a number list)
  bool min_exclusive = false, max_exclusive = false;

  // Empty when `value` is acceptable, else a message like "expected a number, got 'abc'".
  std::string check(const YAML::Node& value) const;
  std::string default_text() const;
  // The valid range in interval notation ("[0, 1)", "> 0", ">= 1"); empty when none is declared.
  std::string range_text() const;
};

class Schema {
 public:
  Schema& add(std::string name, Type type, YAML::Node default_value, std::string doc);
  Schema& required(std::string name, Type type, std::string doc);
  // Modifiers for the parameter added last.
  Schema& min(double v, bool exclusive = false);
  Schema& max(double v, bool exclusive = false);
  Schema& range(double lo, double hi) { return min(lo).max(hi); }
  Schema& above(double v) { return min(v, true); }
  Schema& below(double v) { return max(v, true); }
  Schema& choices(std::vector<std::string> words);
  Schema& nullable();
  Schema& scalar_ok();

  const Param* find(const std::string& name) const;
  const std::vector<Param>& params() const { return params_; }
  std::vector<std::string> names() const;

 private:
  Param& last();
  std::vector<Param> params_;
};

// A component's validated parameters (defaults filled in). Conversions cannot fail once the
// recipe engine has checked the node against the schema.
class Config {
 public:
  Config() = default;
  explicit Config(YAML::Node node, std::string path = "") : node_(node), path_(std::move(path)) {}

  template <class T>
  T get(const std::string& key) const { return node_[key].as<T>(); }
  template <class T>
  T get(const std::string& key, const T& fallback) const {
    auto v = node_[key];
    return v && !v.IsNull() ? v.as<T>() : fallback;
  }
  bool is_null(const std::string& key) const { auto v = node_[key]; return !v || v.IsNull(); }
  bool is_word(const std::string& key, const std::string& word) const;
  bool has(const std::string& key) const { return bool(node_[key]); }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }  // e.g. "optimizer", for error messages

 private:
  YAML::Node node_;
  std::string path_;
};

// Closest candidate within a small edit distance, for "did you mean" hints; empty if none.
// `by_last_part`: dotted candidates are compared by their last part (`epochs` finds
// `train.epochs`), the first of equally close ones wins.
std::string closest(const std::string& word, const std::vector<std::string>& candidates, bool by_last_part = false);
// " (did you mean 'CANDIDATE'?)" for the closest candidate, or "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates, bool by_last_part = false);

}  // namespace trainrun
