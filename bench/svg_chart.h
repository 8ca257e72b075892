// Line charts as SVG for the benchmarks' pictures (rsvg-convert makes PNGs of them): panels side by
// side, each with its series of (x, y) points, a linear or logarithmic x axis, and a legend.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace paratune::bench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); a non-finite y leaves a gap
  std::string color;                             // "" = the palette's next
  bool markers = true;
  std::vector<std::size_t> highlighted;          // points drawn as larger open circles (e.g. a minimum)
};

struct Panel {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<Series> series;
  double y_low = NAN, y_high = NAN;  // NAN: from the data
  std::vector<double> x_ticks;       // empty: 6 even steps of the axis
};

inline const char* palette(std::size_t i) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  return colors[i % 8];
}

// `title` above the panels; `note` under them.
inline std::string line_chart_svg(const std::string& title, const std::vector<Panel>& panels,
                                  const std::string& note = "") {
  const double pw = 420, ph = 300, left = 64, top = 48, gap = 150, bottom = 60;
  const double width = left + panels.size() * (pw + gap), height = top + ph + bottom + (note.empty() ? 0 : 16);
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="11">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="{2}" y="18" text-anchor="middle" font-weight="bold" font-size="13">{3}</text>)" "\n",
      width, height, width / 2, title);
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    const double x0 = left + p * (pw + gap);
    double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
    for (const Series& s : panel.series)
      for (const auto& [x, y] : s.points) {
        if (!std::isfinite(y)) continue;
        xl = std::min(xl, x), xh = std::max(xh, x), yl = std::min(yl, y), yh = std::max(yh, y);
      }
    if (!std::isfinite(xl)) xl = 0, xh = 1, yl = 0, yh = 1;
    if (std::isfinite(panel.y_low)) yl = panel.y_low;
    if (std::isfinite(panel.y_high)) yh = panel.y_high;
    if (yh <= yl) yh = yl + 1;
    if (xh <= xl) xh = xl + 1;
    const auto tx = [&](double v, bool log) { return log ? std::log10(v) : v; };
    const double txl = tx(xl, panel.log_x), txh = tx(xh, panel.log_x), tyl = tx(yl, panel.log_y),
                 tyh = tx(yh, panel.log_y);
    const auto X = [&](double x) { return x0 + pw * (tx(x, panel.log_x) - txl) / (txh - txl); };
    const auto Y = [&](double y) {
      return top + ph * (1 - (std::clamp(tx(y, panel.log_y), tyl, tyh) - tyl) / (tyh - tyl));
    };
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>)" "\n", x0 + pw / 2,
                       top - 8, panel.title);
    svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)" "\n", x0, top, pw, ph);
    // Ticks: 5 even steps of the (transformed) axis, labelled in data units.
    for (int i = 0; i <= 5; ++i) {
      const double ty = tyl + (tyh - tyl) * i / 5, y = panel.log_y ? std::pow(10, ty) : ty;
      svg += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#e4e4e4"/><text x="{3}" y="{4:.1f}" text-anchor="end">{5:.3g}</text>)" "\n",
                         x0, Y(y), x0 + pw, x0 - 4, Y(y) + 4, y);
      if (!panel.x_ticks.empty()) continue;
      const double txi = txl + (txh - txl) * i / 5, x = panel.log_x ? std::pow(10, txi) : txi;
      svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:.3g}</text>)" "\n", X(x), top + ph + 16, x);
    }
    for (double x : panel.x_ticks)
      svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#e4e4e4"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4:.3g}</text>)" "\n",
                         X(x), top, top + ph, top + ph + 16, x);
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)" "\n", x0 + pw / 2, top + ph + 34,
                       panel.x_label);
    svg += fmt::format(R"svg(<text x="{0}" y="{1}" text-anchor="middle" transform="rotate(-90 {0} {1})">{2}</text>)svg" "\n",
                       x0 - 44, top + ph / 2, panel.y_label);
    for (std::size_t i = 0; i < panel.series.size(); ++i) {
      const Series& s = panel.series[i];
      const std::string color = s.color.empty() ? palette(i) : s.color;
      std::string line;
      auto flush = [&] {
        if (line.find(' ') != line.rfind(' '))  // two points or more
          svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.8"/>)" "\n", line, color);
        line.clear();
      };
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto [x, y] = s.points[k];
        if (!std::isfinite(y)) {
          flush();
          continue;
        }
        line += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
        if (s.markers) svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"/>)" "\n", X(x), Y(y), color);
        if (std::find(s.highlighted.begin(), s.highlighted.end(), k) != s.highlighted.end())
          svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="6" fill="none" stroke="{}" stroke-width="2"/>)" "\n",
                             X(x), Y(y), color);
      }
      flush();
      const double ly = top + 12 + 16 * i;
      svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{3}" stroke-width="2"/><text x="{4}" y="{5}">{6}</text>)" "\n",
                         x0 + pw + 10, ly, x0 + pw + 28, color, x0 + pw + 32, ly + 4, s.name);
    }
  }
  if (!note.empty())
    svg += fmt::format(R"(<text x="{}" y="{}" font-size="10">{}</text>)" "\n", left, height - 8, note);
  return svg + "</svg>\n";
}

}  // namespace paratune::bench
