#include "runner/cli/sweep_report.h"

#include "runner/cli/predict_files.h"

#include "runner/export/plot.h"
#include "runner/io/run_results.h"
#include "support/durable_file.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace trainrun::cli {
namespace {

namespace fs = std::filesystem;

struct Row {
  const SweepRun* run;
  std::string status;
  RunResults results;
};

std::string status_of(const std::map<std::string, int>& codes, const SweepRun& run, const RunResults& r) {
  auto it = codes.find(run.folder);
  if (it == codes.end()) return r.finished ? "finished" : "not run";
  if (it->second == 0) return "finished";
  return it->second == 130 ? "interrupted" : it->second == 138 ? "pre-empted" : fmt::format("failed (exit {})", it->second);
}

// The columns after the swept keys: the best metric, then every figure of the last evaluation.
std::vector<std::string> figure_columns(const std::vector<Row>& rows) {
  std::set<std::string> keys;
  for (const Row& r : rows)
    for (const auto& [k, v] : r.results.last_eval) keys.insert(k);
  return {keys.begin(), keys.end()};
}

// `full`: every digit (the CSV, read back by programs); else 6 significant ones (the Markdown table).
std::string number(const std::optional<double>& v, bool full) {
  return !v ? "" : full ? fmt::format("{}", *v) : fmt::format("{:.6g}", *v);
}

std::vector<std::vector<std::string>> table(const std::vector<Row>& rows, const SweepPlan& plan, const std::string& metric,
                                            bool full) {
  const std::vector<std::string> figures = figure_columns(rows);
  std::vector<std::string> head = {"run"};
  for (const SweptKey& k : plan.swept) head.push_back(k.key);
  head.insert(head.end(), {"status", "best_" + metric, "best_step"});
  for (const std::string& f : figures) head.push_back("last_" + f);
  head.insert(head.end(), {"train_loss", "step"});
  std::vector<std::vector<std::string>> out = {head};
  for (const Row& r : rows) {
    std::vector<std::string> line = {r.run->folder};
    for (const auto& [key, value] : r.run->values) line.push_back(value);
    line.insert(line.end(), {r.status, number(r.results.best, full), r.results.best ? std::to_string(r.results.best_step) : ""});
    for (const std::string& f : figures) {
      auto it = r.results.last_eval.find(f);
      line.push_back(it == r.results.last_eval.end() ? "" : number(it->second, full));
    }
    line.insert(line.end(), {number(r.results.train_loss, full), std::to_string(r.results.step)});
    out.push_back(line);
  }
  return out;
}

std::string as_csv(const std::vector<std::vector<std::string>>& t) {
  std::string out;
  for (const auto& line : t) {
    for (std::size_t i = 0; i < line.size(); ++i) out += (i ? "," : "") + csv_cell(line[i]);
    out += "\n";
  }
  return out;
}

std::string as_markdown(const std::vector<std::vector<std::string>>& t) {
  std::string out;
  for (std::size_t r = 0; r < t.size(); ++r) {
    out += "|";
    for (const std::string& cell : t[r]) out += " " + cell + " |";
    out += "\n";
    if (r == 0) out += std::string("|") + [&] {
      std::string rule;
      for (std::size_t i = 0; i < t[0].size(); ++i) rule += "---|";
      return rule;
    }() + "\n";
  }
  return out;
}

// One panel per swept key: the best metric of each run against the key's value (numbers on a
// numeric axis, log where they span a decade, ticked at the values; anything else as categories
// in the given order).
Plot key_plot(const std::vector<Row>& rows, const SweptKey& key, std::size_t k, const std::string& metric) {
  Plot p;
  p.title = "best " + metric + " by " + key.key;
  p.x_label = key.key;
  p.y_label = metric;
  bool numeric = true;
  std::vector<double> xs;
  for (const std::string& v : key.values) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    numeric &= end && *end == '\0' && std::isfinite(x);
    xs.push_back(x);
  }
  const double lo = *std::min_element(xs.begin(), xs.end()), hi = *std::max_element(xs.begin(), xs.end());
  p.log_x = numeric && lo > 0 && hi / lo >= 10;
  if (!numeric) p.x_categories = key.values;
  if (numeric) p.x_ticks = xs, p.x_tick_labels = key.values;
  PlotSeries s{"", {}, {}, {30, 110, 200}, /*line=*/false};
  for (const Row& r : rows) {
    if (!r.results.best) continue;
    const std::string& v = r.run->values[k].second;
    const std::size_t at = std::size_t(std::find(key.values.begin(), key.values.end(), v) - key.values.begin());
    s.x.push_back(numeric ? xs[at] : double(at));
    s.y.push_back(*r.results.best);
  }
  p.series = {s};
  return p;
}

}  // namespace

void write_sweep_report(const fs::path& dir, const SweepPlan& plan, const std::vector<SweepRun>& runs,
                        const std::map<std::string, int>& codes, const CheckpointOptions& output) {
  const std::string metric = output.best_metric.empty() ? "eval_loss" : output.best_metric;
  const bool greater = output.best_metric.empty() ? false : output.greater_is_better;
  std::vector<Row> rows;
  for (const SweepRun& run : runs) {
    RunResults r = read_run_results((dir / run.folder).string(), metric, greater);
    rows.push_back({&run, status_of(codes, run, r), r});
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (!a.results.best || !b.results.best) return bool(a.results.best) && !b.results.best;
    return greater ? *a.results.best > *b.results.best : *a.results.best < *b.results.best;
  });
  const auto t = table(rows, plan, metric, /*full=*/false);
  write_file_atomic(dir / "sweep_report.csv", as_csv(table(rows, plan, metric, /*full=*/true)));
  write_file_atomic(dir / "sweep_report.md", as_markdown(t));
  std::vector<Plot> plots;
  for (std::size_t k = 0; k < plan.swept.size(); ++k) plots.push_back(key_plot(rows, plan.swept[k], k, metric));
  const std::string png = plot_png(plots);
  if (!png.empty()) write_file_atomic(dir / "sweep_plot.png", png);
  spdlog::info("sweep: runs by {} ({} is better):\n{}", metric, greater ? "higher" : "lower", as_markdown(t));
  spdlog::info("Wrote {} (and .md{})", (dir / "sweep_report.csv").string(), png.empty() ? "" : ", sweep_plot.png");
}

}  // namespace trainrun::cli
