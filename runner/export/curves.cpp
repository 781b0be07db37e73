#include "runner/export/curves.h"

#include "runner/export/plot.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace trainrun {
namespace {

PlotSeries series_of(const std::vector<nlohmann::json>& lines, const std::string& key, std::array<int, 3> rgb) {
  PlotSeries s{key == "loss" ? "training loss" : "evaluation loss", {}, {}, rgb};
  for (const auto& line : lines)
    if (line.contains(key) && line.contains("step") && line[key].is_number() && std::isfinite(line[key].get<double>())) {
      s.x.push_back(line["step"].get<double>());
      s.y.push_back(line[key].get<double>());
    }
  return s;
}

}  // namespace

std::string training_curves_png(const std::vector<nlohmann::json>& lines) {
  Plot plot;
  plot.x_label = "step";
  plot.y_label = "loss";
  plot.series = {series_of(lines, "loss", {30, 110, 200}), series_of(lines, "eval_loss", {230, 120, 40})};
  if (plot.series[0].x.size() < 2 && plot.series[1].x.size() < 2) return "";
  return plot_png({plot});
}

}  // namespace trainrun
