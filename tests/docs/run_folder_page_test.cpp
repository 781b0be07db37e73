// docs/reference/run-folder.md's tables of files and keys are a real run's, never written by hand:
// this test trains a small run (evaluations, EMA, a best checkpoint, checkpoint rotation), lists the
// run folder and a checkpoint, and flattens every JSON file a checkpoint holds and every kind of
// metrics.jsonl line into its keys and their JSON types. Between each `<!-- generated: ID -->` and
// `<!-- end: ID -->` of the page, the first columns (path or key, type) must be the run's, in the
// run's order, and every row must say what it means: a file or key that a change adds shows up as a
// failure here until the page describes it. With TRAINRUN_UPDATE_DOCS=1 (`make docs-reference`) the
// tables are rewritten instead, keeping each row's meaning by its key; a new row's meaning is left
// empty, which the check then names. The checkpoint table is the checkpoint format's own list
// (components/callbacks/checkpoint_format.h), whole rows of it, checked against the run's
// checkpoint: a file the run writes must be declared there, and every file the trainer always
// writes must be in the run's checkpoint.
#include "components/callbacks/checkpoint_format.h"
#include "support/markdown_table.h"
#include "test_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace trainrun::run_folder_page {
namespace fs = std::filesystem;

const std::string kPage = "docs/reference/run-folder.md";

constexpr const char* kRecipe = R"(name: page
model: {name: basicnet}
data:
  dataset: {name: mnist, root: /usr/share/datasets/fashion-mnist}
  train_transforms: [to_tensor, normalize]
  batch_size: 32
  max_train_samples: 128
  max_eval_samples: 64
  workers: 1
optimizer: {name: adamw, lr: 1.0e-3}
scheduler: {name: linear, warmup_steps: 1}
train: {epochs: 2, loss: nll, log_every_steps: 2, eval_every: epoch, ema: {decay: 0.9}}
output: {dir: run, save_every: epoch, keep_last: 1, load_best_model_at_end: true}
world: {nproc_per_node: 1, master_port: 0, threads_per_proc: 1}
)";

// One generated table: its first columns per row, in the run's order.
struct Table {
  std::string id;
  std::vector<std::string> header;               // every column's title; the last is "what it means"
  std::vector<std::vector<std::string>> rows;    // the generated columns (all but the last, or all)
};

std::string type_of(const nlohmann::ordered_json& v) {
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_null()) return "null";
  if (v.is_array()) return "list";
  return "object";
}

// Keys as `a.b`, `a[].b` for lists of objects; `log_history` (metrics.jsonl's lines) and `job`
// (the recipe's sections that make the run the same job) stay whole.
void flatten(const nlohmann::ordered_json& v, const std::string& path, std::vector<std::vector<std::string>>& out) {
  auto add = [&](const std::string& key, const std::string& type) {
    for (const auto& row : out)
      if (row[0] == "`" + key + "`") return;
    out.push_back({"`" + key + "`", type});
  };
  const bool whole = path == "log_history" || path == "job";
  if (v.is_object() && !whole) {
    for (const auto& [k, item] : v.items()) flatten(item, path.empty() ? k : path + "." + k, out);
  } else if (v.is_array() && !v.empty() && v[0].is_object() && !whole) {
    for (const auto& item : v) flatten(item, path + "[]", out);
  } else {
    add(path, type_of(v));
  }
}

// A name with the parts that differ between runs replaced: checkpoint-8 -> checkpoint-<step>.
std::string shown(const std::string& name) {
  std::string s = std::regex_replace(name, std::regex("^events\\.out\\.tfevents\\.\\d+\\.[^.]+\\.\\d+$"),
                                     "events.out.tfevents.<time>.<host>.<pid>");
  return std::regex_replace(s, std::regex("checkpoint-\\d+"), "checkpoint-<step>");
}

std::vector<std::vector<std::string>> listing(const fs::path& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : entries) {
    std::string name = shown(p.filename().string());
    if (fs::is_symlink(p)) name += " -> " + shown(fs::read_symlink(p).string());
    else if (fs::is_directory(p)) name += "/";
    rows.push_back({"`" + name + "`"});
  }
  return rows;
}

Table checkpoint_table(const fs::path& checkpoint) {
  Table t{"checkpoint", {"path", "what it is", "written by", "without it, resuming"}, {}};
  std::set<std::string> written;
  for (const auto& e : fs::directory_iterator(checkpoint)) written.insert(e.path().filename().string());
  for (const auto& file : kCheckpointFiles) {
    t.rows.push_back({"`" + std::string(file.name) + "`", file.holds, file.written_by, file.if_missing});
    if (file.role != CheckpointFileRole::Added && !written.count(file.name))
      ADD_FAILURE() << checkpoint << " has no " << file.name << ", which every checkpoint holds";
    written.erase(file.name);
  }
  for (const auto& name : written)
    ADD_FAILURE() << checkpoint << " holds " << name << ": declare it in components/callbacks/checkpoint_format.h";
  return t;
}

std::vector<Table> run_tables(const fs::path& run) {
  std::vector<Table> tables;
  tables.push_back({"run-folder", {"path", "what it is"}, listing(run)});
  fs::path checkpoint;
  for (const auto& e : fs::directory_iterator(run))
    if (e.is_directory() && !fs::is_symlink(e.path()) && e.path().filename().string().rfind("checkpoint-", 0) == 0)
      checkpoint = e.path();
  tables.push_back(checkpoint_table(checkpoint));
  for (const std::string name : {"trainer_state", "trainrun_state", "scheduler", "scaler"}) {
    Table t{name, {"key", "in this run", "what it means"}, {}};
    flatten(nlohmann::ordered_json::parse(test::read_file((checkpoint / (name + ".json")).string())), "", t.rows);
    tables.push_back(t);
  }
  // metrics.jsonl: its train lines (a loss), evaluation lines and the closing line, each kind's keys.
  Table train{"metrics-train", {"key", "in this run", "what it means"}, {}};
  Table eval{"metrics-eval", {"key", "in this run", "what it means"}, {}};
  Table end{"metrics-end", {"key", "in this run", "what it means"}, {}};
  std::istringstream in(test::read_file((run / "metrics.jsonl").string()));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::ordered_json::parse(line);
    flatten(j, "", j.contains("train_runtime") ? end.rows : j.contains("eval_loss") ? eval.rows : train.rows);
  }
  for (auto* t : {&train, &eval, &end}) tables.push_back(*t);
  return tables;
}

std::string row_text(const std::vector<std::string>& c) {
  std::string s = "|";
  for (const auto& x : c) s += " " + x + " |";
  return s;
}

TEST(RunFolderPage, TablesAreARealRunsFilesAndKeys) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  test::write_file(dir / "recipe.yaml", kRecipe);
  auto r = test::run("cd " + dir.path().string() + " && " + test::trainrun("recipe.yaml"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto tables = run_tables(dir.path() / "run");

  const std::string path = test::source(kPage);
  std::vector<std::string> lines = test::page_lines(path);
  const bool update = std::getenv("TRAINRUN_UPDATE_DOCS") != nullptr;
  for (const auto& t : tables) {
    const auto begin = std::find(lines.begin(), lines.end(), "<!-- generated: " + t.id + " -->");
    const auto stop = std::find(begin, lines.end(), "<!-- end: " + t.id + " -->");
    if (begin == lines.end() || stop == lines.end()) {
      ADD_FAILURE() << kPage << " has no `<!-- generated: " << t.id << " -->` ... `<!-- end: " << t.id << " -->`";
      continue;
    }
    std::map<std::string, std::string> meaning;  // by the first column
    for (auto it = begin + 1; it != stop; ++it) {
      auto c = test::table_cells(*it);
      if (c.size() == t.header.size()) meaning[c[0]] = c.back();
    }
    std::string rule = "|";
    for (std::size_t i = 0; i < t.header.size(); ++i) rule += "---|";
    std::vector<std::string> wanted = {row_text(t.header), rule};
    for (auto row : t.rows) {
      if (row.size() < t.header.size()) {
        const std::string m = meaning.count(row[0]) ? meaning[row[0]] : "";
        if (!update) {
          EXPECT_NE(m, "") << kPage << ", table " << t.id << ": " << row[0] << " is not described";
        }
        row.push_back(m);
      }
      wanted.push_back(row_text(row));
    }
    const std::vector<std::string> have(begin + 1, stop);
    if (update) {
      const auto at = begin - lines.begin();
      lines.erase(begin + 1, stop);
      lines.insert(lines.begin() + at + 1, wanted.begin(), wanted.end());
    } else {
      EXPECT_EQ(have, wanted) << kPage << ", table " << t.id
                              << ": not what a run writes (make docs-reference rewrites the table, keeping each row's meaning)";
    }
  }
  if (update) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
}

}  // namespace trainrun::run_folder_page
