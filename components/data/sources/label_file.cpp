#include "components/data/sources/label_file.h"

#include "components/data/data_error.h"

#include <csv.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace trainrun {
namespace {

struct CsvRow {
  std::vector<std::string> fields;
  int64_t line = 0;
};

// libcsv's callbacks gather fields into rows; `line` is the physical line being fed.
struct CsvState {
  std::vector<CsvRow> rows;
  CsvRow row;
  int64_t line = 0;
};

void on_field(void* text, std::size_t size, void* data) {
  auto* s = static_cast<CsvState*>(data);
  if (s->row.fields.empty()) s->row.line = s->line;
  s->row.fields.emplace_back(static_cast<const char*>(text), size);
}

void on_row(int, void* data) {
  auto* s = static_cast<CsvState*>(data);
  s->rows.push_back(std::move(s->row));
  s->row = {};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open the labels file");
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);  // a UTF-8 byte-order mark (Excel writes one)
  return s;
}

// The file's lines, each with its '\n' (libcsv is fed one line at a time to know where it is).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

std::vector<CsvRow> parse_csv(const std::string& path) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) throw DataError(path + ": cannot start the CSV parser");
  CsvState state;
  auto fail = [&](int64_t line) {
    const std::string why = csv_strerror(csv_error(&parser));
    csv_free(&parser);
    throw DataError(fmt::format("{}: line {}: not valid CSV ({}; a quote inside a field must be doubled, \"\")", path,
                                line, why));
  };
  for (const std::string& line : lines_of(slurp(path))) {
    ++state.line;
    if (csv_parse(&parser, line.data(), line.size(), on_field, on_row, &state) != line.size()) fail(state.line);
  }
  if (csv_fini(&parser, on_field, on_row, &state) != 0) fail(state.line);
  csv_free(&parser);
  return state.rows;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// The separator of a file's label cells when none is given: `|` if some cell has one (class names
// may hold spaces: "Ankle boot|Bag"), else " " (spaces, as Planet's "haze primary").
std::string file_separator(const std::vector<std::string>& cells) {
  for (const auto& cell : cells)
    if (cell.find('|') != std::string::npos) return "|";
  return " ";
}

// A cell of labels: split at `separator` (" ": at runs of whitespace), each label trimmed.
std::vector<std::string> split_labels(const std::string& cell, const std::string& separator) {
  std::vector<std::string> out;
  const std::string text = trimmed(cell);
  if (separator == " ") {
    std::istringstream words(text);
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
  const std::string& sep = separator;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (std::string label = trimmed(text.substr(start, end - start)); !label.empty()) out.push_back(label);
    start = end + sep.size();
  }
  return out;
}

int64_t column_of(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : int64_t(it - header.begin());
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

LabelFile read_csv(const std::string& path, const LabelFileOptions& o) {
  std::vector<CsvRow> rows = parse_csv(path);
  if (rows.empty()) throw DataError(path + ": empty labels file (expected a header, then one row per image)");
  std::vector<std::string> header;
  for (const auto& h : rows.front().fields) header.push_back(trimmed(h));
  auto find = [&](const std::string& wanted, const char* key) {
    const int64_t c = column_of(header, wanted);
    if (c < 0)
      throw DataError(fmt::format("{}: line 1: no column '{}' ({}); the header has: {}", path, wanted, key, listed(header)));
    return c;
  };
  const int64_t image = !o.image_column.empty() ? find(o.image_column, "image_column")
                        : column_of(header, "image") >= 0 ? column_of(header, "image")
                                                          : 0;
  int64_t labels = -1;
  if (!o.labels_column.empty()) labels = find(o.labels_column, "labels_column");
  for (const char* name : {"labels", "label", "tags"})
    if (labels < 0 && o.labels_column.empty()) labels = column_of(header, name);
  if (labels < 0 && header.size() == 2) labels = 1 - image;
  if (header.size() < 2) throw DataError(path + ": line 1: one column; expected an image column and labels");
  LabelFile out;
  std::vector<int64_t> class_columns;
  if (labels < 0)  // wide: every other column is a class, 0/1
    for (int64_t c = 0; c < int64_t(header.size()); ++c)
      if (c != image) class_columns.push_back(c), out.columns.push_back(header[std::size_t(c)]);
  std::string separator = o.separator;
  if (separator.empty() && labels >= 0) {
    std::vector<std::string> cells;
    for (std::size_t r = 1; r < rows.size(); ++r)
      if (std::size_t(labels) < rows[r].fields.size()) cells.push_back(rows[r].fields[std::size_t(labels)]);
    separator = file_separator(cells);
  }
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    if (row.fields.size() != header.size())
      throw DataError(fmt::format("{}: line {}: {} fields, the header has {}", path, row.line, row.fields.size(),
                                  header.size()));
    LabelRow entry{trimmed(row.fields[std::size_t(image)]), {}, row.line};
    if (labels >= 0) entry.labels = split_labels(row.fields[std::size_t(labels)], separator);
    for (std::size_t k = 0; k < class_columns.size(); ++k) {
      const std::string v = trimmed(row.fields[std::size_t(class_columns[k])]);
      if (v != "0" && v != "1")
        throw DataError(fmt::format("{}: line {}: column '{}' is '{}'; a class column holds 0 or 1", path, row.line,
                                    out.columns[k], v));
      if (v == "1") entry.labels.push_back(out.columns[k]);
    }
    out.rows.push_back(std::move(entry));
  }
  return out;
}

std::string label_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  throw DataError(where + ": a label is " + v.dump() + "; labels are strings or integers");
}

LabelFile read_jsonl(const std::string& path, const LabelFileOptions& o) {
  const std::string image_key = o.image_column.empty() ? "image" : o.image_column;
  struct Parsed {
    nlohmann::json labels;
    LabelRow row;
    std::string where;
  };
  std::vector<Parsed> parsed;
  std::vector<std::string> cells;  // the labels given as strings, for the file's separator
  int64_t line_no = 0;
  for (const std::string& line : lines_of(slurp(path))) {
    ++line_no;
    if (trimmed(line).empty()) continue;
    const std::string where = fmt::format("{}: line {}", path, line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) throw DataError(where + ": not a JSON object");
    if (!j.contains(image_key) || !j[image_key].is_string())
      throw DataError(where + ": no \"" + image_key + "\" string (image_column)");
    std::string labels_key = o.labels_column;
    for (const char* name : {"labels", "label", "tags"})
      if (labels_key.empty() && j.contains(name)) labels_key = name;
    if (labels_key.empty() || !j.contains(labels_key))
      throw DataError(where + ": no \"" + (labels_key.empty() ? std::string("labels") : labels_key) + "\" (labels_column)");
    if (j[labels_key].is_string()) cells.push_back(j[labels_key].get<std::string>());
    parsed.push_back({j[labels_key], LabelRow{j[image_key].get<std::string>(), {}, line_no}, where});
  }
  const std::string separator = o.separator.empty() ? file_separator(cells) : o.separator;
  LabelFile out;
  for (Parsed& p : parsed) {
    const nlohmann::json& v = p.labels;
    if (v.is_array())
      for (const auto& item : v) p.row.labels.push_back(label_text(item, p.where));
    else if (v.is_string())
      p.row.labels = split_labels(v.get<std::string>(), separator);
    else
      p.row.labels.push_back(label_text(v, p.where));
    out.rows.push_back(std::move(p.row));
  }
  return out;
}

}  // namespace

LabelFile read_label_file(const std::string& path, const LabelFileOptions& options) {
  const bool jsonl = path.size() >= 6 && (path.compare(path.size() - 6, 6, ".jsonl") == 0 ||
                                          path.compare(path.size() - 5, 5, ".json") == 0);
  return jsonl ? read_jsonl(path, options) : read_csv(path, options);
}

}  // namespace trainrun
