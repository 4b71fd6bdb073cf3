// Inline SVG charts for the onboard report: a line/scatter chart (several series, optional log
// axes, horizontal reference lines, labelled dots) and a horizontal grouped bar chart. The SVG
// is self-contained (no scripts, fonts or external references) and every text is escaped.
#pragma once
#include <string>
#include <vector>

namespace fusor::report::svg {

struct Axis {
  std::string label;
  bool log = false;
  // Range; when min >= max it comes from the data (log axes to whole decades, linear ones to
  // nice ticks; linear axes start at 0 when all the data is positive).
  double min = 0, max = 0;
};

struct Point {
  double x = 0, y = 0;
};

struct Series {
  std::string name;      // legend text; empty: not in the legend
  std::string color;     // any CSS colour
  std::vector<Point> points;
  bool dashed = false;
  bool markers = true;
  bool emphasis = false;  // drawn thicker, on top
};

// A horizontal line at y across the plot, labelled at its left end.
struct ReferenceLine {
  double y = 0;
  std::string label, color;
};

// A dot with an optional label beside it and a tooltip (SVG <title>).
struct Dot {
  double x = 0, y = 0;
  double radius = 4, opacity = 0.7;
  std::string color, label, tooltip;
};

struct LineChart {
  std::string id;      // unique within the page (names the clip path)
  std::string title;   // read by screen readers and shown as a tooltip
  Axis x, y;
  std::vector<Series> series;
  std::vector<ReferenceLine> references;
  std::vector<Dot> dots;
  int width = 900, height = 380;
};

// Points outside the axis range (or not positive on a log axis) are clipped or left out, never
// drawn over the axes. An empty chart renders its axes and "no data".
std::string line_chart(const LineChart& chart);

struct BarGroup {
  std::string label;            // the category (one row of bars)
  std::vector<double> values;   // one per BarChart::series, >= 0
};

struct BarChart {
  std::string title;
  std::string value_label;           // the x axis label, e.g. "ms per inference"
  std::vector<std::string> series;   // e.g. {"before", "after"}
  std::vector<std::string> colors;   // one per series
  std::vector<BarGroup> groups;
  int width = 900;                   // the height follows from the number of groups
};

std::string bar_chart(const BarChart& chart);

// Tick values: linear ticks at 1, 2 or 5 x 10^k steps covering [lo, hi] with about `target`
// intervals; log ticks at each decade (plus 2 and 5 when the range spans under two decades).
std::vector<double> linear_ticks(double lo, double hi, int target = 5);
std::vector<double> log_ticks(double lo, double hi);

}  // namespace fusor::report::svg
