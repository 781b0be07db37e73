// One registry template for every component kind. A component registers itself in its own .cpp:
//
//   TRAINRUN_REGISTER(Classifier, "basicnet", "the PyTorch MNIST example net", schema, factory);
//
// Each base class names its kind and factory signature with a `Kind<Base>` specialisation, so
// `trainrun list` / `describe` find every kind without the runner listing anything by hand.
#pragma once

#include "registry/plugin_abi.h"
#include "registry/schema.h"

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainrun {

template <class Base>
struct Kind;  // specialised next to each base: `static constexpr const char* name` (plural: "losses"),
             // `singular` ("loss", for messages) and `using Factory`

struct EntryInfo {
  std::string name;
  std::string doc;
  Schema schema;
  std::string origin;  // the plugin file that registered it; empty: built into trainrun
};

// The plugin load_plugin is loading now (its path), or empty: what registrations are made by.
const std::string& plugin_being_loaded();
// A name registered twice: by a plugin being loaded, noted for load_plugin to refuse the plugin
// with (exit 2, both libraries named) rather than thrown inside dlopen's static initialisers;
// inside trainrun itself, a logic_error (a bug caught by every test).
void name_taken(const std::string& kind, const std::string& name, const std::string& first_origin);

// Type-erased view of one registry, for `list` and `describe`.
class KindView {
 public:
  virtual ~KindView() = default;
  virtual std::vector<const EntryInfo*> entries() const = 0;
  const EntryInfo* find(const std::string& name) const {
    for (auto* e : entries())
      if (e->name == name) return e;
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto* e : entries()) out.push_back(e->name);
    return out;
  }
};

// All kinds, by plural name ("models", "datasets", ...).
std::map<std::string, const KindView*>& kinds();

template <class Base>
class Registry : public KindView {
 public:
  using Factory = typename Kind<Base>::Factory;
  struct Entry : EntryInfo {
    Factory make;
  };

  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  bool add(std::string name, std::string doc, Schema schema, Factory make) {
    if (auto it = entries_.find(name); it != entries_.end()) {
      name_taken(Kind<Base>::name, name, it->second.origin);
      return false;
    }
    Entry e;
    e.name = name;
    e.doc = std::move(doc);
    e.schema = std::move(schema);
    e.make = std::move(make);
    e.origin = plugin_being_loaded();
    entries_.emplace(std::move(name), std::move(e));
    return true;
  }

  const Entry& get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end())
      throw std::out_of_range(std::string(Kind<Base>::name) + "/" + name + " is not registered");
    return it->second;
  }

  std::vector<const EntryInfo*> entries() const override {
    std::vector<const EntryInfo*> out;
    for (auto& [_, e] : entries_) out.push_back(&e);
    return out;
  }

 private:
  Registry() { kinds()[Kind<Base>::name] = this; }
  std::map<std::string, Entry> entries_;
};

}  // namespace trainrun

#define TRAINRUN_CONCAT_INNER(a, b) a##b
#define TRAINRUN_CONCAT(a, b) TRAINRUN_CONCAT_INNER(a, b)
#define TRAINRUN_REGISTER(Base, name, doc, schema, factory)                         \
  static const bool TRAINRUN_CONCAT(trainrun_registered_, __COUNTER__) [[maybe_unused]] = \
      ::trainrun::Registry<Base>::instance().add(name, doc, schema, factory)
