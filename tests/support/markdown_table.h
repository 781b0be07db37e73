// The Markdown tables of the reference pages that tests write and check (docs/reference/
// bad-inputs.md, run-folder.md): a page's lines, and a table row's cells.
#pragma once

#include "test_util.h"

#include <sstream>
#include <string>
#include <vector>

namespace trainrun::test {

// A file's lines, without their newlines.
inline std::vector<std::string> page_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The cells of a table row (`| a | b |`), trimmed, split at the `|` outside code spans.
inline std::vector<std::string> table_cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  bool code = false;
  for (std::size_t i = 1; i < row.size(); ++i) {  // row[0] is the leading '|'
    if (row[i] == '`') code = !code;
    if (row[i] == '|' && !code) {
      auto b = cell.find_first_not_of(' ');
      out.push_back(b == std::string::npos ? "" : cell.substr(b, cell.find_last_not_of(' ') - b + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

}  // namespace trainrun::test
