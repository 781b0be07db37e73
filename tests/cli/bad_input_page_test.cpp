// docs/reference/bad-inputs.md and the BadInput tests (bad_input_*_test.cpp) name the same rows.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

// Every BadInput test has its row in the page, and every row names a BadInput test: a new row
// cannot be added without the test that writes its lines, nor a test without its row.
TEST(BadInputPage, RowsAndTestsAreTheSame) {
  std::set<std::string> tests, rows;
  auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i) {
    auto* suite = unit->GetTestSuite(i);
    if (std::string(suite->name()) != "BadInput") continue;
    for (int j = 0; j < suite->total_test_count(); ++j) tests.insert(std::string("BadInput.") + suite->GetTestInfo(j)->name());
  }
  const std::regex named("`(BadInput\\.[A-Za-z0-9]+)`");
  for (const auto& line : test::page_lines(test::source(kPage))) {
    if (line.rfind("| ", 0) != 0) continue;
    const auto c = test::table_cells(line);
    if (c.empty()) continue;
    for (std::sregex_iterator it(c.back().begin(), c.back().end(), named), end; it != end; ++it) rows.insert((*it)[1]);
  }
  EXPECT_GE(tests.size(), 50u);
  EXPECT_EQ(rows, tests);
}

}  // namespace
}  // namespace trainrun::bad_input
