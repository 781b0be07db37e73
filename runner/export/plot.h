// Line and scatter plots as PNG bytes, drawn with OpenCV: the training curves of a model card,
// lr-find's loss against the learning rate (a log axis, the suggestions marked) and a sweep's
// metric against each swept key (numbers, or the values as categories).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace trainrun {

struct PlotSeries {
  std::string name;                 // the legend's text ("" = not in the legend)
  std::vector<double> x, y;         // non-finite points are left out
  std::array<int, 3> rgb = {30, 110, 200};
  bool line = true;                 // joined by a line (else points only)
};

// A vertical line at x with a label beside it (lr-find's suggestions).
struct PlotMarker {
  double x = 0;
  std::string label;
  std::array<int, 3> rgb = {200, 60, 40};
};

struct Plot {
  std::string title, x_label, y_label;
  bool log_x = false;
  // When set, x values are indices into these, printed as the ticks (a sweep's non-numeric values).
  std::vector<std::string> x_categories;
  // Ticks at these x values with these labels (a sweep's values as written), instead of evenly spaced ones.
  std::vector<double> x_ticks;
  std::vector<std::string> x_tick_labels;
  std::vector<PlotSeries> series;
  std::vector<PlotMarker> markers;
};

// PNG bytes of the plots stacked top to bottom, each `width` x `height`; empty when no plot has
// a series with a point.
std::string plot_png(const std::vector<Plot>& plots, int width = 800, int height = 450);

}  // namespace trainrun
