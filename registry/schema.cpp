#include "registry/schema.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace trainrun {

const char* type_name(Type t) {
  switch (t) {
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::Bool: return "bool";
    case Type::String: return "string";
    case Type::Path: return "path";
    case Type::IntList: return "list[int]";
    case Type::FloatList: return "list[float]";
    case Type::StringList: return "list[string]";
    case Type::Map: return "map";
    case Type::List: return "list";
  }
  return "?";
}

namespace {

std::string show(const YAML::Node& v) {
  if (v.IsScalar()) return "'" + v.Scalar() + "'";
  YAML::Emitter out;
  out << YAML::Flow << v;
  return out.c_str();
}

template <class T>
std::optional<T> as(const YAML::Node& v) {
  if (!v.IsScalar()) return std::nullopt;
  T out;
  if (!YAML::convert<T>::decode(v, out)) return std::nullopt;
  return out;
}

std::string check_number(const Param& p, const YAML::Node& v, bool integer) {
  std::optional<double> x;
  if (integer) {
    if (auto i = as<int64_t>(v)) x = double(*i);
  } else {
    x = as<double>(v);
    if (x && !std::isfinite(*x)) return "must be a finite number, got " + show(v);
  }
  if (!x) return std::string("expected ") + (integer ? "an integer" : "a number") + ", got " + show(v);
  std::ostringstream msg;
  if (p.min && (p.min_exclusive ? *x <= *p.min : *x < *p.min)) {
    msg << "must be " << (p.min_exclusive ? "> " : ">= ") << *p.min << ", got " << v.Scalar();
    return msg.str();
  }
  if (p.max && (p.max_exclusive ? *x >= *p.max : *x > *p.max)) {
    msg << "must be " << (p.max_exclusive ? "< " : "<= ") << *p.max << ", got " << v.Scalar();
    return msg.str();
  }
  return "";
}

std::string check_scalar(const Param& p, Type t, const YAML::Node& v) {
  switch (t) {
    case Type::Int: return check_number(p, v, true);
    case Type::Float: return check_number(p, v, false);
    case Type::Bool: return as<bool>(v) ? "" : "expected true or false, got " + show(v);
    case Type::String:
    case Type::Path:
      if (!v.IsScalar()) return "expected a string, got " + show(v);
      if (!p.choices.empty() &&
          std::find(p.choices.begin(), p.choices.end(), v.Scalar()) == p.choices.end()) {
        std::string all;
        for (auto& c : p.choices) all += (all.empty() ? "" : ", ") + c;
        return "unknown value " + show(v) + did_you_mean(v.Scalar(), p.choices) +
               "; one of: " + all;
      }
      return "";
    default: return "";
  }
}

Type element_type(Type t) {
  return t == Type::IntList ? Type::Int : t == Type::FloatList ? Type::Float : Type::String;
}

}  // namespace

std::string Param::check(const YAML::Node& v) const {
  if (!v || v.IsNull()) return nullable ? "" : "must not be null";
  bool is_list_type = type == Type::IntList || type == Type::FloatList || type == Type::StringList;
  if (type != Type::String && type != Type::Path && v.IsScalar() &&
      std::find(choices.begin(), choices.end(), v.Scalar()) != choices.end())
    return "";  // a special word such as `auto`
  if (type == Type::Map) return v.IsMap() || (scalar_ok && v.IsScalar()) ? "" : "expected a mapping, got " + show(v);
  if (type == Type::List) {
    std::string words;
    for (auto& c : choices) words += " or '" + c + "'";
    return v.IsSequence() ? "" : "expected a list" + words + ", got " + show(v);
  }
  if (is_list_type) {
    if (v.IsScalar() && scalar_ok) return check_scalar(*this, element_type(type), v);
    if (!v.IsSequence()) {
      // A list that also takes words (weight: balanced): name them, and the closest to a misspelt one.
      std::string words;
      for (auto& c : choices) words += " or '" + c + "'";
      return std::string("expected a ") + type_name(type) + words + ", got " + show(v) +
             (v.IsScalar() ? did_you_mean(v.Scalar(), choices) : "");
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string err = check_scalar(*this, element_type(type), v[i]);
      if (!err.empty()) return "item " + std::to_string(i) + ": " + err;
    }
    return "";
  }
  std::string err = check_scalar(*this, type, v);
  if (!err.empty() && type != Type::String && !choices.empty() && v.IsScalar() &&
      err.rfind("expected", 0) == 0) {
    std::string words;
    for (auto& c : choices) words += " or '" + c + "'";
    err += " (allowed:" + words.substr(3) + " or a value)";
  }
  return err;
}

std::string Param::default_text() const {
  if (required) return "(required)";
  if (!default_value || default_value.IsNull()) return "null";
  return default_value.IsScalar() ? default_value.Scalar() : show(default_value);
}

std::string Param::range_text() const {
  auto num = [](double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  if (min && max)
    return (min_exclusive ? "(" : "[") + num(*min) + ", " + num(*max) + (max_exclusive ? ")" : "]");
  if (min) return (min_exclusive ? "> " : ">= ") + num(*min);
  if (max) return (max_exclusive ? "< " : "<= ") + num(*max);
  return "";
}

Schema& Schema::add(std::string name, Type type, YAML::Node default_value, std::string doc) {
  Param p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = default_value;
  p.doc = std::move(doc);
  p.nullable = !default_value || default_value.IsNull();
  params_.push_back(std::move(p));
  return *this;
}

Schema& Schema::required(std::string name, Type type, std::string doc) {
  add(std::move(name), type, YAML::Node(), std::move(doc));
  last().required = true;
  last().nullable = false;
  return *this;
}

Param& Schema::last() { return params_.back(); }
Schema& Schema::min(double v, bool exclusive) { last().min = v; last().min_exclusive = exclusive; return *this; }
Schema& Schema::max(double v, bool exclusive) { last().max = v; last().max_exclusive = exclusive; return *this; }
Schema& Schema::choices(std::vector<std::string> words) { last().choices = std::move(words); return *this; }
Schema& Schema::nullable() { last().nullable = true; return *this; }
Schema& Schema::scalar_ok() { last().scalar_ok = true; return *this; }

const Param* Schema::find(const std::string& name) const {
  for (auto& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> Schema::names() const {
  std::vector<std::string> out;
  for (auto& p : params_) out.push_back(p.name);
  return out;
}

bool Config::is_word(const std::string& key, const std::string& word) const {
  auto v = node_[key];
  return v && v.IsScalar() && v.Scalar() == word;
}

static std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates, bool by_last_part) {
  std::string hint = closest(word, candidates, by_last_part);
  return hint.empty() ? "" : " (did you mean '" + hint + "'?)";
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates, bool by_last_part) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (auto& c : candidates) {
    std::size_t d = edit_distance(word, by_last_part ? c.substr(c.rfind('.') + 1) : c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace trainrun
