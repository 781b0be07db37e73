#include "runner/export/curves.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace trainrun {
namespace {

struct Series {
  std::vector<cv::Point2d> points;  // (step, value)
  cv::Scalar colour;                // BGR
  std::string name;
};

Series series_of(const std::vector<nlohmann::json>& lines, const std::string& key, cv::Scalar colour) {
  Series s{{}, colour, key == "loss" ? "training loss" : "evaluation loss"};
  for (const auto& line : lines)
    if (line.contains(key) && line.contains("step") && line[key].is_number() && std::isfinite(line[key].get<double>()))
      s.points.emplace_back(line["step"].get<double>(), line[key].get<double>());
  return s;
}

}  // namespace

std::string training_curves_png(const std::vector<nlohmann::json>& lines) {
  const std::vector<Series> all = {series_of(lines, "loss", {200, 110, 30}), series_of(lines, "eval_loss", {40, 120, 230})};
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  bool drawable = false;
  for (const Series& s : all) {
    drawable |= s.points.size() >= 2;
    for (const auto& p : s.points) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  if (!drawable) return "";
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  y0 = std::min(y0, 0.0);
  const int width = 800, height = 450, left = 70, right = 20, top = 40, bottom = 50;
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  auto at = [&](const cv::Point2d& p) {
    return cv::Point(int(std::lround(left + (p.x - x0) / (x1 - x0) * (width - left - right))),
                     int(std::lround(height - bottom - (p.y - y0) / (y1 - y0) * (height - top - bottom))));
  };
  const cv::Scalar grey(90, 90, 90);
  cv::line(img, {left, height - bottom}, {width - right, height - bottom}, grey, 1, cv::LINE_AA);
  cv::line(img, {left, top}, {left, height - bottom}, grey, 1, cv::LINE_AA);
  for (int k = 0; k <= 4; ++k) {  // y ticks
    const double v = y0 + (y1 - y0) * k / 4;
    const cv::Point p = at({x0, v});
    cv::putText(img, fmt::format("{:.3g}", v), {4, p.y + 4}, cv::FONT_HERSHEY_SIMPLEX, 0.4, grey, 1, cv::LINE_AA);
  }
  cv::putText(img, fmt::format("step {:.0f}", x0), {left, height - bottom + 20}, cv::FONT_HERSHEY_SIMPLEX, 0.45, grey, 1,
              cv::LINE_AA);
  cv::putText(img, fmt::format("step {:.0f}", x1), {width - right - 90, height - bottom + 20}, cv::FONT_HERSHEY_SIMPLEX,
              0.45, grey, 1, cv::LINE_AA);
  int legend = left + 10;
  for (const Series& s : all) {
    if (s.points.empty()) continue;
    std::vector<cv::Point> poly;
    for (const auto& p : s.points) poly.push_back(at(p));
    cv::polylines(img, poly, false, s.colour, 2, cv::LINE_AA);
    for (const auto& p : poly) cv::circle(img, p, 2, s.colour, cv::FILLED, cv::LINE_AA);
    cv::line(img, {legend, 20}, {legend + 24, 20}, s.colour, 2, cv::LINE_AA);
    cv::putText(img, s.name, {legend + 30, 25}, cv::FONT_HERSHEY_SIMPLEX, 0.5, {30, 30, 30}, 1, cv::LINE_AA);
    legend += 200;
  }
  std::vector<unsigned char> png;
  cv::imencode(".png", img, png);
  return std::string(png.begin(), png.end());
}

}  // namespace trainrun
