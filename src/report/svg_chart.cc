#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include "report/html.h"
#include "report/number_text.h"

namespace fusor::report::svg {
namespace {

// Text metrics are estimated (no font access): 12 px system sans averages about 6.6 px a glyph.
constexpr double kCharWidth = 6.6;
constexpr double kLegendRow = 18;

double text_width(const std::string& s, double font_px = 12) { return s.size() * kCharWidth * font_px / 12; }

std::string px(double v) { return fixed_decimals(v, 1); }

std::string truncate(const std::string& s, size_t max_chars) {
  return s.size() <= max_chars ? s : s.substr(0, max_chars - 1) + "~";
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return significant_digits(v / 1e6) + "M";
  if (a >= 1e4) return significant_digits(v / 1e3) + "k";
  return significant_digits(v, 3);
}

struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;  // pixels for lo and hi
  std::vector<double> ticks;

  bool valid(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double operator()(double v) const {
    double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

// The axis range and ticks: the given range, else one that covers `values` with round ends.
Scale make_scale(const Axis& axis, std::vector<double> values) {
  Scale s;
  s.log = axis.log;
  if (axis.min < axis.max && (!axis.log || axis.min > 0)) {
    s.lo = axis.min;
    s.hi = axis.max;
    std::vector<double> all = axis.log ? log_ticks(s.lo, s.hi) : linear_ticks(s.lo, s.hi);
    for (double t : all)
      if (t >= s.lo - 1e-9 * std::fabs(s.hi - s.lo) && t <= s.hi + 1e-9 * std::fabs(s.hi - s.lo)) s.ticks.push_back(t);
    return s;
  }
  std::erase_if(values, [&](double v) { return !s.valid(v); });
  if (axis.log) {
    double lo = values.empty() ? 1 : *std::min_element(values.begin(), values.end());
    double hi = values.empty() ? 10 : *std::max_element(values.begin(), values.end());
    s.lo = std::pow(10, std::floor(std::log10(lo)));
    s.hi = std::pow(10, std::ceil(std::log10(hi)));
    if (s.hi <= s.lo) s.hi = s.lo * 10;
    s.ticks = log_ticks(s.lo, s.hi);
    return s;
  }
  double lo = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? 1 : *std::max_element(values.begin(), values.end());
  if (lo > 0) lo = 0;
  if (hi <= lo) hi = lo + 1;
  s.ticks = linear_ticks(lo, hi);
  s.lo = s.ticks.front();
  s.hi = s.ticks.back();
  return s;
}

std::string legend_swatch(double x, double y, const Series& s) {
  std::string out = "<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x + 22) + "\" y2=\"" + px(y) +
                    "\" stroke=\"" + html_escape(s.color) + "\" stroke-width=\"" + (s.emphasis ? "3.5" : "2") + "\"" +
                    (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>";
  if (s.markers) out += "<circle cx=\"" + px(x + 11) + "\" cy=\"" + px(y) + "\" r=\"3\" fill=\"" + html_escape(s.color) + "\"/>";
  return out;
}

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) return {lo};
  const double raw = (hi - lo) / target;
  int exponent = static_cast<int>(std::floor(std::log10(raw)));
  double mantissa = 10;
  for (double m : {1.0, 2.0, 5.0})
    if (m * std::pow(10, exponent) >= raw * 0.999) {
      mantissa = m;
      break;
    }
  // Ticks as (integer x mantissa) scaled by a power of ten, dividing for negative powers, so
  // that 0.6 prints as 0.6 and not 0.6000000000000001.
  const double scale = std::pow(10, std::abs(exponent));
  auto value = [&](double k) { return exponent < 0 ? k * mantissa / scale : k * mantissa * scale; };
  const double step = value(1);
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9);
  for (int i = 0; i <= 1000; ++i) {
    const double t = value(first + i);
    ticks.push_back(t == 0 ? 0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return {};
  const bool fine = hi / lo < 100;
  std::vector<double> ticks;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      double t = m * std::pow(10, e);
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
    }
  return ticks;
}

namespace {

// The plot area of a line chart, in pixels; the scales map data into it.
struct Plot {
  Scale x, y;
  double left, top, right, bottom;
};

// Legend entries (the named series) in rows below the plot, wrapped to the chart's width.
std::vector<std::vector<const Series*>> legend_rows(const LineChart& c, double left) {
  std::vector<std::vector<const Series*>> rows(1);
  double row_width = 0;
  for (const Series& s : c.series) {
    if (s.name.empty()) continue;
    double w = 30 + text_width(s.name) + 18;
    if (row_width + w > c.width - left && !rows.back().empty()) {
      rows.emplace_back();
      row_width = 0;
    }
    rows.back().push_back(&s);
    row_width += w;
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// Vertical grid lines with their labels under the plot, at the x scale's ticks.
std::string x_grid(const Scale& sx, double top, double bottom) {
  std::string o;
  for (double t : sx.ticks) {
    double x = sx(t);
    o += "<line class=\"grid\" x1=\"" + px(x) + "\" y1=\"" + px(top) + "\" x2=\"" + px(x) + "\" y2=\"" + px(bottom) + "\"/>";
    o += "<text class=\"tick\" x=\"" + px(x) + "\" y=\"" + px(bottom + 16) + "\" text-anchor=\"middle\">" +
         html_escape(tick_label(t)) + "</text>";
  }
  return o;
}

// Both grids with their tick labels, the frame, the axis labels, and "no data" when empty.
std::string axes(const LineChart& c, const Plot& p, bool empty) {
  std::string o = x_grid(p.x, p.top, p.bottom);
  for (double t : p.y.ticks) {
    double y = p.y(t);
    o += "<line class=\"grid\" x1=\"" + px(p.left) + "\" y1=\"" + px(y) + "\" x2=\"" + px(p.right) + "\" y2=\"" + px(y) + "\"/>";
    o += "<text class=\"tick\" x=\"" + px(p.left - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">" +
         html_escape(tick_label(t)) + "</text>";
  }
  o += "<rect class=\"frame\" x=\"" + px(p.left) + "\" y=\"" + px(p.top) + "\" width=\"" + px(p.right - p.left) +
       "\" height=\"" + px(p.bottom - p.top) + "\"/>";
  o += "<text class=\"axis-label\" x=\"" + px((p.left + p.right) / 2) + "\" y=\"" + px(p.bottom + 38) +
       "\" text-anchor=\"middle\">" + html_escape(c.x.label) + "</text>";
  o += "<text class=\"axis-label\" transform=\"translate(16 " + px((p.top + p.bottom) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(c.y.label) + "</text>";
  if (empty)
    o += "<text class=\"no-data\" x=\"" + px((p.left + p.right) / 2) + "\" y=\"" + px((p.top + p.bottom) / 2) +
         "\" text-anchor=\"middle\">no data</text>";
  return o;
}

std::string reference_lines(const std::vector<ReferenceLine>& references, const Plot& p) {
  std::string o;
  for (const ReferenceLine& r : references) {
    if (!p.y.valid(r.y)) continue;
    double y = p.y(r.y);
    o += "<line x1=\"" + px(p.left) + "\" y1=\"" + px(y) + "\" x2=\"" + px(p.right) + "\" y2=\"" + px(y) + "\" stroke=\"" +
         html_escape(r.color) + "\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>";
    // At the left end: curves rise to the right, so that end is usually clear.
    o += "<text class=\"ref-label\" x=\"" + px(p.left + 6) + "\" y=\"" + px(y - 5) + "\" fill=\"" +
         html_escape(r.color) + "\">" + html_escape(r.label) + "</text>";
  }
  return o;
}

// Each series as a polyline with its markers; emphasised series last, so they are drawn on top.
std::string series_lines(const std::vector<Series>& series, const Plot& p) {
  std::vector<const Series*> order;
  for (const Series& s : series) order.push_back(&s);
  std::stable_partition(order.begin(), order.end(), [](const Series* s) { return !s->emphasis; });
  std::string o;
  for (const Series* s : order) {
    std::string points;
    std::string markers;
    for (const Point& pt : s->points) {
      if (!p.x.valid(pt.x) || !p.y.valid(pt.y)) continue;
      points += (points.empty() ? "" : " ") + px(p.x(pt.x)) + "," + px(p.y(pt.y));
      if (s->markers)
        markers += "<circle cx=\"" + px(p.x(pt.x)) + "\" cy=\"" + px(p.y(pt.y)) + "\" r=\"" + (s->emphasis ? "4" : "3") +
                   "\" fill=\"" + html_escape(s->color) + "\"/>";
    }
    if (points.empty()) continue;
    o += "<polyline fill=\"none\" stroke=\"" + html_escape(s->color) + "\" stroke-width=\"" + (s->emphasis ? "3.5" : "2") +
         "\"" + (s->dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points + "\"/>" + markers;
  }
  return o;
}

// The dots, then their labels (drawn over every dot).
std::string dots(const std::vector<Dot>& dots, const Plot& p) {
  std::vector<Box> placed;
  std::string o, labels;
  for (const Dot& d : dots) {
    if (!p.x.valid(d.x) || !p.y.valid(d.y)) continue;
    double x = p.x(d.x), y = p.y(d.y);
    o += "<circle cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"" + px(d.radius) + "\" fill=\"" + html_escape(d.color) +
         "\" fill-opacity=\"" + fixed_decimals(d.opacity, 2) + "\" stroke=\"" + html_escape(d.color) + "\">";
    if (!d.tooltip.empty()) o += "<title>" + html_escape(d.tooltip) + "</title>";
    o += "</circle>";
    if (d.label.empty()) continue;
    // Beside the dot, on the side with room; moved down until it overlaps no earlier label.
    const double w = text_width(d.label, 11);
    const bool to_left = x + d.radius + 4 + w > p.right;
    double lx = to_left ? x - d.radius - 4 - w : x + d.radius + 4;
    double ly = y + 4;
    for (int tries = 0; tries < 8; ++tries) {
      Box b{lx, ly - 10, lx + w, ly + 2};
      if (std::none_of(placed.begin(), placed.end(), [&](const Box& other) { return other.overlaps(b); })) break;
      ly += 13;
    }
    placed.push_back({lx, ly - 10, lx + w, ly + 2});
    labels += "<text class=\"dot-label\" x=\"" + px(lx) + "\" y=\"" + px(ly) + "\">" + html_escape(d.label) + "</text>";
  }
  return o + labels;
}

std::string legend(const std::vector<std::vector<const Series*>>& rows, double left, double top) {
  std::string o;
  double ly = top;
  for (const auto& row : rows) {
    double lx = left;
    for (const Series* s : row) {
      o += legend_swatch(lx, ly, *s);
      o += "<text class=\"legend\" x=\"" + px(lx + 28) + "\" y=\"" + px(ly + 4) + "\">" + html_escape(s->name) + "</text>";
      lx += 30 + text_width(s->name) + 18;
    }
    ly += kLegendRow;
  }
  return o;
}

}  // namespace

std::string line_chart(const LineChart& c) {
  const double left = 70, right = 24, top = 16, axis_space = 52;
  const std::vector<std::vector<const Series*>> legend_layout = legend_rows(c, left);
  const double total_height = c.height + legend_layout.size() * kLegendRow + (legend_layout.empty() ? 0 : 6);

  std::vector<double> xs, ys;
  for (const Series& s : c.series)
    for (const Point& pt : s.points) xs.push_back(pt.x), ys.push_back(pt.y);
  for (const Dot& d : c.dots) xs.push_back(d.x), ys.push_back(d.y);
  for (const ReferenceLine& r : c.references) ys.push_back(r.y);
  Plot p{make_scale(c.x, xs), make_scale(c.y, ys), left, top, c.width - right, c.height - axis_space};
  p.x.p0 = p.left, p.x.p1 = p.right;
  p.y.p0 = p.bottom, p.y.p1 = p.top;

  const std::string clip = html_escape(c.id) + "-plot";
  std::string o = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(c.width) + " " + px(total_height) +
                  "\" width=\"" + std::to_string(c.width) + "\" height=\"" + px(total_height) +
                  "\" role=\"img\" aria-label=\"" + html_escape(c.title) + "\">";
  o += "<title>" + html_escape(c.title) + "</title>";
  o += "<defs><clipPath id=\"" + clip + "\"><rect x=\"" + px(p.left) + "\" y=\"" + px(p.top) + "\" width=\"" +
       px(p.right - p.left) + "\" height=\"" + px(p.bottom - p.top) + "\"/></clipPath></defs>";
  o += axes(c, p, xs.empty());
  o += "<g clip-path=\"url(#" + clip + ")\">" + reference_lines(c.references, p) + series_lines(c.series, p) +
       dots(c.dots, p) + "</g>";
  return o + legend(legend_layout, left, c.height + 4) + "</svg>";
}

std::string bar_chart(const BarChart& c) {
  const size_t n = std::max<size_t>(c.series.size(), 1);
  const double bar = 11, gap = 10, top = 30, bottom = 44, right = 64;
  double label_chars = 4;
  for (const BarGroup& g : c.groups) label_chars = std::max(label_chars, static_cast<double>(std::min<size_t>(g.label.size(), 28)));
  const double left = 12 + label_chars * kCharWidth;
  const double plot_height = std::max<double>(c.groups.size(), 1) * (n * bar + gap);
  const double height = top + plot_height + bottom;

  std::vector<double> values;
  for (const BarGroup& g : c.groups)
    for (double v : g.values)
      if (std::isfinite(v) && v > 0) values.push_back(v);
  Scale sx = make_scale(Axis{c.value_label}, values);
  sx.p0 = left, sx.p1 = c.width - right;

  std::string o = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(c.width) + " " + px(height) + "\" width=\"" +
                  std::to_string(c.width) + "\" height=\"" + px(height) + "\" role=\"img\" aria-label=\"" +
                  html_escape(c.title) + "\">";
  o += "<title>" + html_escape(c.title) + "</title>";
  double lx = left;
  for (size_t s = 0; s < c.series.size(); ++s) {
    const std::string color = s < c.colors.size() ? c.colors[s] : "#888";
    o += "<rect x=\"" + px(lx) + "\" y=\"8\" width=\"14\" height=\"10\" fill=\"" + html_escape(color) + "\"/>";
    o += "<text class=\"legend\" x=\"" + px(lx + 20) + "\" y=\"17\">" + html_escape(c.series[s]) + "</text>";
    lx += 40 + text_width(c.series[s]);
  }
  const double plot_bottom = top + plot_height;
  o += x_grid(sx, top, plot_bottom);
  o += "<text class=\"axis-label\" x=\"" + px((left + sx.p1) / 2) + "\" y=\"" + px(plot_bottom + 36) +
       "\" text-anchor=\"middle\">" + html_escape(c.value_label) + "</text>";
  if (c.groups.empty())
    o += "<text class=\"no-data\" x=\"" + px((left + sx.p1) / 2) + "\" y=\"" + px(top + plot_height / 2 + 4) +
         "\" text-anchor=\"middle\">no data</text>";
  double y = top + gap / 2;
  for (const BarGroup& g : c.groups) {
    o += "<text class=\"bar-label\" x=\"" + px(left - 6) + "\" y=\"" + px(y + n * bar / 2 + 4) + "\" text-anchor=\"end\">" +
         html_escape(truncate(g.label, 28)) + "<title>" + html_escape(g.label) + "</title></text>";
    for (size_t s = 0; s < n; ++s) {
      const double v = s < g.values.size() && std::isfinite(g.values[s]) && g.values[s] > 0 ? g.values[s] : 0;
      const std::string color = s < c.colors.size() ? c.colors[s] : "#888";
      const double w = std::max(0.0, sx(std::min(v, sx.hi)) - left);
      o += "<rect x=\"" + px(left) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" + px(bar - 1) +
           "\" fill=\"" + html_escape(color) + "\"/>";
      if (v > 0)  // an absent bar reads as zero; a "0" beside every one is noise
        o += "<text class=\"bar-value\" x=\"" + px(left + w + 4) + "\" y=\"" + px(y + bar - 2) + "\">" +
             html_escape(significant_digits(v, 3)) + "</text>";
      y += bar;
    }
    y += gap;
  }
  o += "<line class=\"axis\" x1=\"" + px(left) + "\" y1=\"" + px(top) + "\" x2=\"" + px(left) + "\" y2=\"" + px(plot_bottom) + "\"/>";
  return o + "</svg>";
}

}  // namespace fusor::report::svg
