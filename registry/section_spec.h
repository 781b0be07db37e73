// A struct read from a section of YAML, each key declared once: its name, type, default, doc and
// range (as Schema::add), and the member it fills, or a reader for what the struct derives from
// it. From that one declaration come the Schema (validation, defaults, `trainrun describe`) and
// the reading of a validated section into the struct, so a struct member has no default of its own.
//
//   SectionSpec<TrainConfig>()
//       .key("epochs", &TrainConfig::epochs, Type::Int, yaml("1"), "passes over the training set").min(1)
//       .key("max_grad_norm", Type::Float, YAML::Node(), "clip ...; null = no clipping",
//            [](TrainConfig& c, const YAML::Node& v) { c.max_grad_norm = v.IsNull() ? 0.0 : v.as<double>(); })
//       .above(0);
#pragma once

#include "registry/schema.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace trainrun {

template <class S>
class SectionSpec {
 public:
  using Reader = std::function<void(S&, const YAML::Node&)>;

  // A key read into `member` as written; an std::optional member holds null as nullopt.
  template <class T>
  SectionSpec& key(std::string name, T S::*member, Type type, YAML::Node default_value, std::string doc) {
    return key(std::move(name), type, std::move(default_value), std::move(doc), into(member));
  }
  // A key whose reader sets what the struct derives from it; without one, the key is validated
  // and defaulted only (a component's section, which the job builder reads through its registry).
  SectionSpec& key(std::string name, Type type, YAML::Node default_value, std::string doc, Reader read = {}) {
    schema_.add(name, type, std::move(default_value), std::move(doc));
    readers_.emplace_back(std::move(name), std::move(read));
    return *this;
  }
  template <class T>
  SectionSpec& required(std::string name, T S::*member, Type type, std::string doc) {
    return required(std::move(name), type, std::move(doc), into(member));
  }
  SectionSpec& required(std::string name, Type type, std::string doc, Reader read = {}) {
    schema_.required(name, type, std::move(doc));
    readers_.emplace_back(std::move(name), std::move(read));
    return *this;
  }

  // Schema's modifiers, for the key declared last.
  SectionSpec& min(double v, bool exclusive = false) { schema_.min(v, exclusive); return *this; }
  SectionSpec& max(double v, bool exclusive = false) { schema_.max(v, exclusive); return *this; }
  SectionSpec& range(double lo, double hi) { schema_.range(lo, hi); return *this; }
  SectionSpec& above(double v) { schema_.above(v); return *this; }
  SectionSpec& below(double v) { schema_.below(v); return *this; }
  SectionSpec& choices(std::vector<std::string> words) { schema_.choices(std::move(words)); return *this; }
  SectionSpec& nullable() { schema_.nullable(); return *this; }
  SectionSpec& scalar_ok() { schema_.scalar_ok(); return *this; }

  const Schema& schema() const { return schema_; }

  // The struct from a section the schema has checked (every key present, defaults filled in),
  // read in declaration order: a reader may use what the keys before it set.
  S read(const YAML::Node& section) const {
    S out{};
    for (const auto& [name, read] : readers_) {
      const YAML::Node value = section[name];
      if (read && value) read(out, value);
    }
    return out;
  }

  // The struct as the declared defaults make it (what a section left empty reads as).
  S defaults() const {
    YAML::Node section(YAML::NodeType::Map);
    for (const Param& p : schema_.params())
      if (!p.required) section[p.name] = YAML::Clone(p.default_value);
    return read(section);
  }

 private:
  template <class T>
  struct is_optional : std::false_type {};
  template <class T>
  struct is_optional<std::optional<T>> : std::true_type {};

  template <class T>
  static Reader into(T S::*member) {
    return [member](S& s, const YAML::Node& v) {
      if constexpr (is_optional<T>::value)
        s.*member = v.IsNull() ? T() : T(v.as<typename T::value_type>());
      else
        s.*member = v.as<T>();
    };
  }

  Schema schema_;
  std::vector<std::pair<std::string, Reader>> readers_;
};

}  // namespace trainrun
