#include "runner/export/plot.h"

#include <fmt/format.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace trainrun {
namespace {

const cv::Scalar kGrey(90, 90, 90), kInk(30, 30, 30);
constexpr int kLeft = 70, kRight = 20, kTop = 40, kBottom = 55;

cv::Scalar bgr(const std::array<int, 3>& rgb) { return cv::Scalar(rgb[2], rgb[1], rgb[0]); }

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.42, cv::Scalar colour = kGrey) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv::LINE_AA);
}

// The data's range on each axis (x as drawn: log10 on a log axis).
struct Frame {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  bool log_x = false;
  int width = 0, height = 0;

  double fx(double x) const { return log_x ? std::log10(x) : x; }
  bool usable(double x, double y) const { return std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0); }
  cv::Point at(double x, double y) const {
    return cv::Point(int(std::lround(kLeft + (fx(x) - x0) / (x1 - x0) * (width - kLeft - kRight))),
                     int(std::lround(height - kBottom - (y - y0) / (y1 - y0) * (height - kTop - kBottom))));
  }
};

Frame frame_of(const Plot& plot, int width, int height) {
  Frame f;
  f.log_x = plot.log_x, f.width = width, f.height = height;
  for (const PlotSeries& s : plot.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!f.usable(s.x[i], s.y[i])) continue;
      f.x0 = std::min(f.x0, f.fx(s.x[i])), f.x1 = std::max(f.x1, f.fx(s.x[i]));
      f.y0 = std::min(f.y0, s.y[i]), f.y1 = std::max(f.y1, s.y[i]);
    }
  if (!plot.x_categories.empty()) f.x0 = -0.5, f.x1 = double(plot.x_categories.size()) - 0.5;
  if (f.x1 == f.x0) f.x0 -= 0.5, f.x1 += 0.5;
  const double x_pad = plot.x_categories.empty() ? (f.x1 - f.x0) * 0.04 : 0;
  f.x0 -= x_pad, f.x1 += x_pad;
  if (f.y1 == f.y0) f.y0 -= 0.5, f.y1 += 0.5;
  const double pad = (f.y1 - f.y0) * 0.05;
  f.y0 -= pad, f.y1 += pad;
  return f;
}

void draw_axes(cv::Mat& img, const Plot& plot, const Frame& f) {
  const int w = f.width, h = f.height;
  cv::line(img, {kLeft, h - kBottom}, {w - kRight, h - kBottom}, kGrey, 1, cv::LINE_AA);
  cv::line(img, {kLeft, kTop}, {kLeft, h - kBottom}, kGrey, 1, cv::LINE_AA);
  for (int k = 0; k <= 4; ++k) {
    const double v = f.y0 + (f.y1 - f.y0) * k / 4;
    text(img, fmt::format("{:.3g}", v), {4, f.at(f.log_x ? 1 : 0, v).y + 4});
  }
  auto tick = [&](double drawn_x, const std::string& label) {
    const int x = int(std::lround(kLeft + (drawn_x - f.x0) / (f.x1 - f.x0) * (w - kLeft - kRight)));
    cv::line(img, {x, h - kBottom}, {x, h - kBottom + 4}, kGrey, 1, cv::LINE_AA);
    text(img, label, {x - 4 * int(label.size()), h - kBottom + 18});
  };
  if (!plot.x_categories.empty()) {
    for (std::size_t i = 0; i < plot.x_categories.size(); ++i) tick(double(i), plot.x_categories[i]);
  } else if (!plot.x_ticks.empty()) {
    for (std::size_t i = 0; i < plot.x_ticks.size() && i < plot.x_tick_labels.size(); ++i)
      tick(f.fx(plot.x_ticks[i]), plot.x_tick_labels[i]);
  } else if (f.log_x) {
    for (double e = std::ceil(f.x0); e <= f.x1; ++e) tick(e, fmt::format("1e{:.0f}", e));
  } else {
    for (int k = 0; k <= 4; ++k) tick(f.x0 + (f.x1 - f.x0) * k / 4, fmt::format("{:.3g}", f.x0 + (f.x1 - f.x0) * k / 4));
  }
  text(img, plot.x_label, {w / 2 - 4 * int(plot.x_label.size()), h - 12}, 0.48, kInk);
  text(img, plot.y_label, {4, kTop - 8}, 0.48, kInk);
  text(img, plot.title, {kLeft + 10, 22}, 0.52, kInk);
}

void draw_plot(cv::Mat& img, const Plot& plot, const Frame& f) {
  draw_axes(img, plot, f);
  int legend = f.width - kRight - 10;
  for (const PlotSeries& s : plot.series) {
    std::vector<cv::Point> points;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (f.usable(s.x[i], s.y[i])) points.push_back(f.at(s.x[i], s.y[i]));
    if (s.line && points.size() > 1) cv::polylines(img, points, false, bgr(s.rgb), 2, cv::LINE_AA);
    for (const cv::Point& p : points) cv::circle(img, p, s.line ? 2 : 4, bgr(s.rgb), cv::FILLED, cv::LINE_AA);
    if (s.name.empty()) continue;
    legend -= 30 + 8 * int(s.name.size());
    cv::line(img, {legend, 32}, {legend + 24, 32}, bgr(s.rgb), 2, cv::LINE_AA);
    text(img, s.name, {legend + 28, 37}, 0.45, kInk);
  }
  int row = 0;
  for (const PlotMarker& m : plot.markers) {
    if (!f.usable(m.x, f.y0)) continue;
    const int x = f.at(m.x, f.y0).x;
    cv::line(img, {x, kTop}, {x, f.height - kBottom}, bgr(m.rgb), 1, cv::LINE_AA);
    text(img, m.label, {x + 4, kTop + 16 + 16 * row++}, 0.42, bgr(m.rgb));
  }
}

}  // namespace

std::string plot_png(const std::vector<Plot>& plots, int width, int height) {
  std::vector<cv::Mat> panels;
  for (const Plot& plot : plots) {
    const Frame f = frame_of(plot, width, height);
    if (!std::isfinite(f.y0) || !std::isfinite(f.x0)) continue;
    cv::Mat img(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
    draw_plot(img, plot, f);
    panels.push_back(img);
  }
  if (panels.empty()) return "";
  cv::Mat all;
  cv::vconcat(panels, all);
  std::vector<unsigned char> png;
  cv::imencode(".png", all, png);
  return std::string(png.begin(), png.end());
}

}  // namespace trainrun
