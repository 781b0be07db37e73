// docs/coming-from-python.md names trainrun keys, components and commands for timm, Trainer and
// Accelerate users. Every backticked name in a table's `trainrun` column is checked against the
// generated reference pages (the binary's own `describe`, kept equal by Docs.Reference*), so a
// renamed key fails here, not in a reader's run. The page's recipe and its `trainrun check` command lines must pass as written.
//
// A span in the trainrun column is one of:
//   `trainrun SUB ...`          SUB is a subcommand of `trainrun --help` (describe's target must exist)
//   `KIND/NAME` or `KIND/NAME.param`   `trainrun describe KIND/NAME` works and lists param
//   `a.b.c`, `a.b: value`, `a.b=value` a recipe key path, resolved section by section (below)
#include "test_util.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <utility>

namespace trainrun {
namespace docs_python_mapping {  // named: the unity build shares anonymous namespaces

using Schema = std::map<std::string, std::string>;  // key -> its documentation text

// The recipe's keys and the components' parameters, read from the generated reference pages
// (docs/reference/recipe.md, components.md, cli.md), which Docs.ReferencePagesAreGenerated
// proves equal to what the binary's `describe --format markdown` writes: one read of three files
// instead of a LibTorch start-up per component.
class Describe {
 public:
  Describe() {
    read_recipe(test::read_file(test::source("docs/reference/recipe.md")));
    read_components(test::read_file(test::source("docs/reference/components.md")));
  }

  // `trainrun describe WHAT`'s keys (WHAT: recipe/SECTION or KIND/NAME); empty and !ok when it has none.
  const Schema& keys(const std::string& what, bool* ok = nullptr) {
    auto found = schemas_.find(what);
    if (ok) *ok = found != schemas_.end();
    static const Schema none;
    return found == schemas_.end() ? none : found->second;
  }

  const std::set<std::string>& sections() { return sections_; }

  // Every parameter of every component of KIND, plus `name`.
  const Schema& union_of(const std::string& kind) {
    Schema& out = unions_[kind];
    out["name"] = "name";
    for (const auto& [what, schema] : schemas_)
      if (what.rfind(kind + "/", 0) == 0) out.insert(schema.begin(), schema.end());
    return out;
  }

  // The schema under `prefix` (a key whose doc text is `doc`): a recipe section, a component
  // chosen by `name` (its doc says "`name` from `trainrun list KIND`"), or one component's keys
  // ("`trainrun describe KIND/NAME`'s keys"); nullopt when none.
  std::optional<Schema> nested(const std::string& prefix, const std::string& doc) {
    if (sections().count(prefix)) return keys("recipe/" + prefix);
    std::smatch m;
    if (std::regex_search(doc, m, std::regex(R"(`name` from `trainrun list (\w+)`)"))) return union_of(m[1]);
    if (std::regex_search(doc, m, std::regex(R"(`trainrun describe (\w+/\w+)`)"))) return keys(m[1]);
    return std::nullopt;
  }

  // Empty when `path` (a.b.c) is a key of the recipe, else what is wrong.
  std::string check_key(const std::string& path) {
    Schema schema = keys("recipe/top");
    std::string prefix, doc;
    std::istringstream parts(path);
    for (std::string part; std::getline(parts, part, '.');) {
      if (!prefix.empty()) {
        auto inner = nested(prefix, doc);
        if (!inner) return prefix + " has no keys below it";
        schema = *inner;
      }
      auto found = schema.find(part);
      if (found == schema.end()) return (prefix.empty() ? "top level" : prefix) + " has no key '" + part + "'";
      prefix += (prefix.empty() ? "" : ".") + part;
      doc = found->second;
    }
    return "";
  }

 private:
  // recipe.md: `## recipe/SECTION`, then `### SECTION.key` (top: `### key`) and its paragraphs.
  void read_recipe(const std::string& page) {
    std::istringstream in(page);
    std::string section, key;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("## recipe/", 0) == 0) {
        section = line.substr(10);
        key.clear();
        if (section != "top") sections_.insert(section);
      } else if (line.rfind("### ", 0) == 0 && !section.empty()) {
        key = line.substr(4);
        if (section != "top" && key.rfind(section + ".", 0) == 0) key = key.substr(section.size() + 1);
        schemas_["recipe/" + section][key] = "";
      } else if (!key.empty()) {
        schemas_["recipe/" + section][key] += " " + line;
      }
    }
  }

  // components.md: `### KIND/NAME`, then a bullet per parameter: "- `param` (type...): doc".
  void read_components(const std::string& page) {
    std::istringstream in(page);
    std::string what;
    const std::regex bullet(R"(^- `(\w+)` (.*)$)");
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("### ", 0) == 0) {
        what = line.substr(4);
        schemas_[what];
      } else if (line.rfind("## ", 0) == 0) {
        what.clear();
      } else if (!what.empty() && std::regex_match(line, m, bullet)) {
        schemas_[what][m[1]] = m[2];
      }
    }
  }

  std::map<std::string, Schema> schemas_;
  std::set<std::string> sections_;
  std::map<std::string, Schema> unions_;
};

// `trainrun SUB` headings of docs/reference/cli.md (walked from the CLI's own parser).
std::set<std::string> subcommands() {
  std::istringstream in(test::read_file(test::source("docs/reference/cli.md")));
  std::set<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("## trainrun ", 0) == 0) out.insert(line.substr(12));
  return out;
}

std::vector<std::string> split_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::istringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first |
  while (std::getline(in, cell, '|')) {
    const auto a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return cells;
}

// The backticked spans of each table's `trainrun` column, with the row they came from.
std::vector<std::pair<std::string, std::string>> trainrun_column_spans(const std::string& page, int* tables) {
  std::vector<std::pair<std::string, std::string>> spans;
  std::istringstream in(page);
  int column = -1;
  bool in_table = false;
  *tables = 0;
  const std::regex tick("`([^`]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    auto cells = split_cells(line);
    if (!in_table) {  // header row
      in_table = true;
      auto it = std::find(cells.begin(), cells.end(), "trainrun");
      column = it == cells.end() ? -1 : int(it - cells.begin());
      *tables += column >= 0;
      continue;
    }
    if (column < 0 || column >= int(cells.size()) || line.rfind("|---", 0) == 0) continue;
    for (std::sregex_iterator i(cells[column].begin(), cells[column].end(), tick), end; i != end; ++i)
      spans.emplace_back((*i)[1], line);
  }
  return spans;
}

const std::string kPage = "docs/coming-from-python.md";

TEST(Docs, PythonMappingNamesRealKeys) {
  const std::string page = test::read_file(test::source(kPage));
  ASSERT_FALSE(page.empty()) << kPage;
  int tables = 0;
  const auto spans = trainrun_column_spans(page, &tables);
  EXPECT_GE(tables, 3) << "timm, Trainer and Accelerate tables with a `trainrun` column";
  ASSERT_GE(spans.size(), 120u) << "the trainrun columns were not found or lost their names";

  Describe describe;
  ASSERT_TRUE(describe.sections().count("train")) << "describe recipe/SECTION no longer lists its sections";
  const auto commands = subcommands();
  ASSERT_TRUE(commands.count("describe")) << "trainrun --help lists no subcommands";
  const std::regex component(R"(^([a-z_]+)/([a-z0-9_]+)(?:\.([a-z_0-9]+))?(?::.*)?$)");
  const std::regex key(R"(^([a-z_][a-z_0-9]*(?:\.[a-z_0-9]+)*)(?:(?::\s|=).*)?$)");
  int keys = 0, components = 0;
  std::smatch m;
  for (const auto& [span, row] : spans) {
    if (span.rfind("trainrun ", 0) == 0) {
      std::istringstream words(span.substr(9));
      std::string sub, target;
      words >> sub >> target;
      EXPECT_TRUE(commands.count(sub)) << "`" << span << "`: no subcommand '" << sub << "'\n  " << row;
      if (sub == "describe") {
        bool ok = false;
        describe.keys(target, &ok);
        EXPECT_TRUE(ok) << "`" << span << "` fails\n  " << row;
      }
    } else if (std::regex_match(span, m, component)) {
      bool ok = false;
      const auto& params = describe.keys(m[1].str() + "/" + m[2].str(), &ok);
      EXPECT_TRUE(ok) << "`" << span << "`: trainrun describe " << m[1] << "/" << m[2] << " fails\n  " << row;
      if (m[3].matched) {
        EXPECT_TRUE(params.count(m[3])) << "`" << span << "`: no parameter '" << m[3] << "'\n  " << row;
      }
      ++components;
    } else if (std::regex_match(span, m, key)) {
      const std::string problem = describe.check_key(m[1]);
      EXPECT_EQ(problem, "") << "`" << span << "`\n  " << row;
      ++keys;
    } else {
      ADD_FAILURE() << "`" << span << "` in a trainrun column is neither a key, a component nor a command\n  " << row;
    }
  }
  EXPECT_GE(keys, 80);
  EXPECT_GE(components, 15);
}

TEST(Docs, PythonMappingKeyCheckCatchesARenamedKey) {
  Describe describe;
  EXPECT_EQ(describe.check_key("train.ema.decay"), "");
  EXPECT_EQ(describe.check_key("data.mixup.cutmix_alpha"), "");
  EXPECT_EQ(describe.check_key("optimizer.nesterov"), "");
  EXPECT_EQ(describe.check_key("data.dataset.val_root"), "");
  EXPECT_EQ(describe.check_key("train.loss.label_smoothing"), "");
  EXPECT_NE(describe.check_key("train.max_steps"), "");
  EXPECT_NE(describe.check_key("optimizer.learning_rate"), "");
  EXPECT_NE(describe.check_key("output.keep_last.n"), "");
  EXPECT_NE(describe.check_key("trainer.epochs"), "");
}

// The page's recipe (included with pymdownx.snippets) and every `build/trainrun check` line it shows
// pass as written, from the checkout's root, without the pictures or the Hub weights present.
TEST(Docs, PythonMappingRecipeChecks) {
  const std::string page = test::read_file(test::source(kPage));
  EXPECT_NE(page.find("--8<-- \"docs/recipes/from-timm.yaml\""), std::string::npos);
  const std::string cd = "cd '" + std::string(TRAINRUN_SOURCE_DIR) + "' && ";

  auto r = test::run(cd + test::trainrun("check docs/recipes/from-timm.yaml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# resolved recipe (docs/recipes/from-timm.yaml)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nmodel: resnet50d, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\noptimizer: adamw, 2 parameter groups"), std::string::npos) << r.out;  // no_decay: bias, norm
  EXPECT_NE(r.out.find("data: pets_folder, not downloaded yet"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    - mixup:\n        mixup_alpha: 0.2\n        cutmix_alpha: 1.0\n"), std::string::npos) << r.out;

  // `build/trainrun check ...` lines of the page's sh blocks, continuation lines joined
  const std::string prefix = "build/trainrun check ";
  std::istringstream in(page);
  std::vector<std::string> checks;
  bool in_sh = false;
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      in_sh = !in_sh && line == "```sh";
      continue;
    }
    if (!in_sh) continue;
    if (!pending.empty() || line.rfind(prefix, 0) == 0) {
      const bool more = !line.empty() && line.back() == '\\';
      pending += more ? line.substr(0, line.size() - 1) : line;
      if (!more) checks.push_back(std::exchange(pending, ""));
    }
  }
  ASSERT_GE(checks.size(), 2u) << "the timm and Trainer examples' check commands";
  for (const auto& command : checks) {
    auto c = test::run(cd + test::trainrun(command.substr(std::string("build/trainrun ").size())));
    EXPECT_EQ(c.code, 0) << command << "\n" << c.out << c.err;
  }
  EXPECT_FALSE(std::filesystem::exists(test::source("data/oxford-pets"))) << "check downloaded the pictures";
}

}  // namespace docs_python_mapping
}  // namespace trainrun
