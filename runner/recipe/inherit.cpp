// Recipe inheritance (inherit.h): reading a recipe and its bases, merging them as OmegaConf.merge
// does, and remembering which file wrote each node.
#include "runner/recipe/inherit.h"

#include "support/errors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace trainrun {

namespace {

namespace fs = std::filesystem;
using YAML::Node;

// `map`'s value under the same plain key as `key`; an invalid node when it has none.
Node value_under(const Node& map, const Node& key) {
  for (auto it = map.begin(); it != map.end(); ++it)
    if (key.IsScalar() && it->first.IsScalar() && it->first.Scalar() == key.Scalar()) return it->second;
  return Node(YAML::NodeType::Undefined);
}

std::string position(const std::string& file, const YAML::Mark& mark) {
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// yaml-cpp's syntax error at `mark`, said as what the line there shows where yaml-cpp's words
// ("illegal map value", "end of map not found") do not: a tab in its indentation (YAML indents
// with spaces only), or an indentation that lines up with none of the blocks above it.
std::string syntax_error(const std::string& file, const std::string& text, const YAML::Mark& mark, const std::string& msg) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && int(lines.size()) <= mark.line;) lines.push_back(line);
  const std::string head = file + ":" + std::to_string(mark.line + 1) + ":";
  if (mark.line < 0 || std::size_t(mark.line) >= lines.size()) return position(file, mark) + ": YAML syntax error: " + msg;
  const std::string& line = lines[std::size_t(mark.line)];
  const std::size_t indent = line.find_first_not_of(" \t");
  const std::size_t tab = line.substr(0, indent).find('\t');
  if (tab != std::string::npos)
    return head + std::to_string(tab + 1) + ": YAML syntax error: a tab in the indentation; YAML indents with spaces only";
  // The indentations open at this line: each line above closes the deeper ones and opens its own.
  std::vector<std::size_t> open;
  bool opens_block = false;  // the line above ends in ':' (a mapping or list follows, deeper)
  for (std::size_t i = 0; i < std::size_t(mark.line); ++i) {
    const std::size_t at = lines[i].find_first_not_of(' ');
    if (at == std::string::npos || lines[i][at] == '#') continue;
    while (!open.empty() && open.back() > at) open.pop_back();
    if (open.empty() || open.back() < at) open.push_back(at);
    const std::string code = lines[i].substr(0, lines[i].find(" #"));  // without a comment
    opens_block = code[code.find_last_not_of(" \r")] == ':';
  }
  const bool deeper_block = !open.empty() && indent > open.back() && opens_block;
  if (indent == std::string::npos || open.empty() || deeper_block || std::count(open.begin(), open.end(), indent))
    return position(file, mark) + ": YAML syntax error: " + msg;
  std::string levels;
  for (std::size_t i = 0; i < open.size(); ++i)
    levels += (i == 0 ? "" : i + 1 == open.size() ? " or " : ", ") + std::to_string(open[i]);
  return head + std::to_string(indent + 1) + ": YAML syntax error: bad indentation: " + std::to_string(indent) +
         " spaces, where the lines above are indented " + levels;
}

// Reads a recipe file and its bases, depth-first; `chain_` is the files being read, outermost
// first, for the message a cycle gets.
class BaseReader {
 public:
  RecipeFiles read_top(const std::string& file) {
    RecipeFiles out;
    out.root = read(file, "");
    out.sources = std::move(sources_);
    return out;
  }

 private:
  // The file's text, or one line saying why it cannot be had (yaml-cpp's LoadFile says "bad file",
  // and a folder given as the recipe escaped as a bare basic_filebuf error). `named_at` is
  // "FILE:LINE:COL: base: " for a base, "" for the recipe itself.
  static std::string read_text(const std::string& file, const std::string& named_at) {
    std::error_code ec;
    if (!fs::exists(file, ec)) throw RecipeError(named_at + file + ": no such recipe file");
    if (fs::is_directory(file, ec)) throw RecipeError(named_at + file + ": is a folder, not a recipe file");
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) throw RecipeError(named_at + file + ": cannot read the recipe: " + std::strerror(errno));
    return text.str();
  }

  static Node parse(const std::string& file, const std::string& named_at) {
    Node root;
    const std::string text = read_text(file, named_at);
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw RecipeError(syntax_error(file, text, e.mark, e.msg));
    }
    if (root.IsNull()) return Node(YAML::NodeType::Map);
    if (!root.IsMap())
      throw RecipeError(position(file, root.Mark()) + ": a recipe is a mapping of sections (model:, data:, ...)");
    return root;
  }

  // `base:` as (the path it names, its node, its dotted name for messages), in order.
  static std::vector<std::pair<Node, std::string>> base_entries(const Node& base, const std::string& file) {
    std::vector<std::pair<Node, std::string>> out;
    const std::string expected = "expected a recipe file or a list of recipe files, got a ";
    if (!base || base.IsNull()) return out;
    if (base.IsScalar()) return {{base, "base"}};
    if (!base.IsSequence()) throw RecipeError(position(file, base.Mark()) + ": base: " + expected + "mapping");
    for (std::size_t i = 0; i < base.size(); ++i) {
      std::string name = "base[" + std::to_string(i) + "]";
      if (!base[i].IsScalar())
        throw RecipeError(position(file, base[i].Mark()) + ": " + name + ": expected a recipe file, got a " +
                          (base[i].IsMap() ? "mapping" : base[i].IsSequence() ? "list" : "null"));
      out.emplace_back(base[i], name);
    }
    return out;
  }

  Node read(const std::string& file, const std::string& named_at) {
    Node root = parse(file, named_at);
    sources_.add_file(root, file);
    const auto bases = base_entries(root["base"], file);
    root.remove("base");
    chain_.push_back(file);
    std::optional<Node> merged;
    for (const auto& [entry, name] : bases) {
      const fs::path written = entry.Scalar();
      const std::string path = (written.is_absolute() ? written : fs::path(file).parent_path() / written).lexically_normal().string();
      const std::string at = position(file, entry.Mark()) + ": " + name + ": ";
      if (written.empty()) throw RecipeError(at + "expected a recipe file, got an empty name");
      std::error_code ec;
      for (const std::string& open : chain_)
        if (fs::weakly_canonical(open, ec) == fs::weakly_canonical(path, ec)) {
          std::string cycle;
          for (auto it = std::find(chain_.begin(), chain_.end(), open); it != chain_.end(); ++it) cycle += *it + " -> ";
          throw RecipeError(at + "a cycle: " + cycle + path);
        }
      Node base = read(path, at);
      merged.emplace(merged ? merge_recipe_trees(*merged, base, sources_) : base);
    }
    chain_.pop_back();
    return merged ? merge_recipe_trees(*merged, root, sources_) : root;
  }

  RecipeSources sources_;
  std::vector<std::string> chain_;
};

}  // namespace

void RecipeSources::add(const Node& node, const std::string& file, const YAML::Mark& mark) {
  entries_.push_back({node, file, mark});
}

void RecipeSources::add_file(const Node& root, const std::string& file) {
  add(root, file, root.Mark());
  if (root.IsMap()) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      add(it->first, file, it->first.Mark());
      add_file(it->second, file);
    }
  } else if (root.IsSequence()) {
    for (const auto& item : root) add_file(item, file);
  }
}

void RecipeSources::add_alias(const Node& made, const Node& from) {
  if (const Entry* e = find(from)) add(made, e->file, e->mark);
}

// Newest first: a mapping merged from several files is recorded after the nodes it holds.
const RecipeSources::Entry* RecipeSources::find(const Node& node) const {
  if (!node) return nullptr;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->node.is(node)) return &*it;
  return nullptr;
}

std::string RecipeSources::where(const Node& node) const {
  const Entry* e = find(node);
  return e ? position(e->file, e->mark) : "";
}

std::string RecipeSources::file_of(const Node& node) const {
  const Entry* e = find(node);
  return e ? e->file : "";
}

std::string RecipeSources::file_at(const YAML::Mark& mark) const {
  std::string file;
  for (const Entry& e : entries_) {
    if (e.mark.pos != mark.pos || e.mark.line != mark.line || e.mark.column != mark.column) continue;
    if (!file.empty() && file != e.file) return "";
    file = e.file;
  }
  return file;
}

const std::string* override_of(const std::map<std::string, std::string>& overrides, const std::string& path) {
  for (const auto& [p, text] : overrides)
    if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0) return &text;
  return nullptr;
}

std::string written_at(const RecipeSources& sources, const std::map<std::string, std::string>& overrides,
                       const std::string& path, const Node& node) {
  if (const std::string* text = override_of(overrides, path)) return "command line '" + *text + "'";
  return sources.where(node);
}

Node merge_recipe_trees(const Node& under, const Node& over, RecipeSources& sources, const std::string& path) {
  if ((under.IsMap() && over.IsSequence()) || (under.IsSequence() && over.IsMap()))
    throw RecipeError(sources.where(over) + ": " + path + ": a " + (over.IsMap() ? "mapping" : "list") +
                      " cannot replace the " + (under.IsMap() ? "mapping" : "list") + " at " + sources.where(under) +
                      " (OmegaConf.merge refuses it too); write it as a " + (under.IsMap() ? "mapping" : "list"));
  if (!under.IsMap() || !over.IsMap()) return over;
  Node out(YAML::NodeType::Map);
  for (auto it = under.begin(); it != under.end(); ++it) {
    Node key = it->first, value = it->second;
    for (auto o = over.begin(); o != over.end(); ++o)
      if (key.IsScalar() && o->first.IsScalar() && o->first.Scalar() == key.Scalar()) {
        // reset, not =: a Node's operator= writes through to the node it refers to.
        value.reset(merge_recipe_trees(value, o->second, sources, (path.empty() ? "" : path + ".") + key.Scalar()));
        key.reset(o->first);  // an unknown key written in both files is reported in the later one
      }
    out.force_insert(key, value);
  }
  for (auto o = over.begin(); o != over.end(); ++o)
    if (!value_under(under, o->first)) out.force_insert(o->first, o->second);
  sources.add_alias(out, over);
  return out;
}

RecipeFiles read_recipe_files(const std::string& file) { return BaseReader().read_top(file); }

}  // namespace trainrun
