// The SVG chart module: ticks, escaping, clipping of out-of-range data, and well-formed output.
#include "report/svg_chart.h"

#include <gtest/gtest.h>

#include "markup_check.h"
#include "report/html.h"
#include "report/number_text.h"

namespace fusor::report::svg {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

TEST(SvgChart, LinearTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(linear_ticks(0, 9.3), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(linear_ticks(0, 1), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  std::vector<double> t = linear_ticks(120, 480);
  EXPECT_EQ(t.front(), 100);
  EXPECT_EQ(t.back(), 500);
  EXPECT_EQ(t[1] - t[0], 100);
}

TEST(SvgChart, LogTicksAreDecadesOrFinerForShortRanges) {
  EXPECT_EQ(log_ticks(0.1, 1000), (std::vector<double>{0.1, 1, 10, 100, 1000}));
  EXPECT_EQ(log_ticks(1, 50), (std::vector<double>{1, 2, 5, 10, 20, 50}));
  EXPECT_TRUE(log_ticks(0, 10).empty());
}

TEST(SvgChart, LineChartEscapesTextAndIsWellFormed) {
  LineChart c;
  c.id = "t1";
  c.title = "a <b> & \"c\"";
  c.x.label = "x <qps>";
  c.y.label = "y & ms";
  c.series.push_back({"model <script>&\"", "#123456", {{1, 2}, {2, 3}, {3, 5}}, false, true, true});
  c.series.push_back({"", "#654321", {{1, 1}, {3, 2}}, true, false, false});
  c.references.push_back({4, "SLO <4> ms", "red"});
  c.dots.push_back({2, 2, 5, 0.5, "blue", "kernel<&>", "tip \"x\""});
  std::string svg = line_chart(c);
  EXPECT_EQ(fusor::test::markup_problem(svg), "") << svg;
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("model &lt;script&gt;&amp;&quot;"), std::string::npos);
  EXPECT_NE(svg.find("SLO &lt;4&gt; ms"), std::string::npos);
  EXPECT_NE(svg.find("kernel&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\""), std::string::npos);  // the dashed series
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "class=\"legend\""), 1u);  // the unnamed series is not in the legend
  EXPECT_NE(svg.find("clip-path=\"url(#t1-plot)\""), std::string::npos);
}

TEST(SvgChart, LogAxesLeaveOutNonPositivePoints) {
  LineChart c;
  c.id = "t2";
  c.x = {"x", true};
  c.y = {"y", true};
  c.series.push_back({"s", "#000", {{0, 1}, {1, -2}, {10, 100}, {100, 1000}}, false, true, false});
  std::string svg = line_chart(c);
  EXPECT_EQ(fusor::test::markup_problem(svg), "");
  EXPECT_EQ(count(svg, "<circle"), 2u + 1u);  // (0, 1) and (1, -2) have no place on log axes; +1 legend
}

TEST(SvgChart, EmptyChartsSayNoData) {
  LineChart c;
  c.id = "t3";
  std::string svg = line_chart(c);
  EXPECT_EQ(fusor::test::markup_problem(svg), "");
  EXPECT_NE(svg.find("no data"), std::string::npos);
  BarChart b;
  std::string bars = bar_chart(b);
  EXPECT_EQ(fusor::test::markup_problem(bars), "");
  EXPECT_NE(bars.find("no data"), std::string::npos);
}

TEST(SvgChart, BarChartHasOneBarPerValue) {
  BarChart b{"ops", "ms", {"before", "after"}, {"#aaa", "#00f"},
             {{"MatMul", {5.5, 4}}, {"Add & <Mul>", {1, 0}}, {"Softmax", {0.2, 0.1}}}};
  std::string svg = bar_chart(b);
  EXPECT_EQ(fusor::test::markup_problem(svg), "") << svg;
  EXPECT_EQ(count(svg, "<rect"), 2u + 6u);  // two legend swatches, six bars
  EXPECT_NE(svg.find("Add &amp; &lt;Mul&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">5.5<"), std::string::npos);
}

TEST(Html, EscapeAndNumbers) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(significant_digits(131.5, 4), "131.5");
  EXPECT_EQ(significant_digits(0.0021), "0.0021");
  EXPECT_EQ(significant_digits(12000), "12000");
  EXPECT_EQ(significant_digits(2.0), "2");
  EXPECT_EQ(significant_digits(0), "0");
  EXPECT_EQ(significant_digits(1e-9), "1e-09");
  EXPECT_EQ(fixed_decimals(2.5, 2), "2.50");
}

}  // namespace
}  // namespace fusor::report::svg
