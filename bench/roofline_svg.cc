#include "bench/roofline_svg.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

namespace headway::bench {
namespace {

// Canvas: plot on the left, the numbered list of cases on the right.
constexpr double kWidth = 1320, kHeight = 720;
constexpr double kLeft = 90, kRight = 770, kTop = 92, kBottom = 640;
constexpr double kListX = 800;
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#e377c2"};

void append(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void append(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// "0.1", "1", "10", "1k", "10k", "1M" for a decade 10^e.
std::string decade_label(int e) {
  static const char* kSuffix[] = {"", "k", "M", "G"};
  if (e < 0) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%.*f", -e, std::pow(10.0, e));
    return buf;
  }
  const int group = std::min(e / 3, 3);
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f%s", std::pow(10.0, e - 3 * group), kSuffix[group]);
  return buf;
}

// "1234", "123", "12.3", "1.23"
std::string figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", v >= 100 ? 0 : v >= 10 ? 1 : 2, v);
  return buf;
}

struct Axis {
  int lo, hi;     // decades: 10^lo .. 10^hi
  double p0, p1;  // pixels of 10^lo and 10^hi
  double at(double v) const { return p0 + (std::log10(v) - lo) / (hi - lo) * (p1 - p0); }
};

Axis decades(double lo, double hi, double p0, double p1) {
  lo = lo > 0 ? lo : 1e-3;
  hi = hi > lo ? hi : lo * 10;
  int a = static_cast<int>(std::floor(std::log10(lo / 1.3)));
  int b = static_cast<int>(std::ceil(std::log10(hi * 1.3)));
  if (b <= a) b = a + 1;
  return Axis{a, b, p0, p1};
}

struct Box {
  double x0, y0, x1, y1;
  bool hits(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

}  // namespace

std::string roofline_svg(const Roofline& r) {
  const bool compute_roof = r.peak_gflops > 0, bw_roof = r.peak_gbps > 0;
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  for (const RooflinePoint& p : r.points) {
    if (!(p.intensity > 0) || !(p.gflops > 0)) continue;
    x_lo = std::min(x_lo, p.intensity), x_hi = std::max(x_hi, p.intensity);
    y_lo = std::min(y_lo, p.gflops), y_hi = std::max(y_hi, p.gflops);
  }
  if (x_hi == 0) x_lo = 1, x_hi = 10, y_lo = 1, y_hi = 10;
  if (compute_roof) y_hi = std::max(y_hi, r.peak_gflops), y_lo = std::min(y_lo, r.peak_gflops);
  if (compute_roof && bw_roof) {
    const double ridge = r.peak_gflops / r.peak_gbps;
    x_lo = std::min(x_lo, ridge), x_hi = std::max(x_hi, ridge);
  }
  const Axis ax = decades(x_lo, x_hi, kLeft, kRight);
  const Axis ay = decades(y_lo, y_hi, kBottom, kTop);
  const double xmin = std::pow(10.0, ax.lo), xmax = std::pow(10.0, ax.hi);
  const double ymin = std::pow(10.0, ay.lo);

  // Legend entries in palette order, one per colour used.
  struct Group {
    unsigned colour;
    std::string name;
  };
  std::vector<Group> groups;
  for (const RooflinePoint& p : r.points) {
    const bool seen = std::any_of(groups.begin(), groups.end(), [&](const Group& g) { return g.colour == p.colour; });
    if (!seen) groups.push_back({p.colour, p.group});
  }
  std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.colour < b.colour; });
  auto colour = [](unsigned index) { return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))]; };

  std::string s;
  append(&s,
         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
         "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
         kWidth, kHeight, kWidth, kHeight);
  append(&s, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  append(&s, "<text x=\"%.0f\" y=\"34\" font-size=\"20\" font-weight=\"bold\">%s</text>\n", kLeft,
         xml(r.title).c_str());
  append(&s, "<text x=\"%.0f\" y=\"58\" font-size=\"13\" fill=\"#444\">%s</text>\n", kLeft, xml(r.subtitle).c_str());

  // Grid and ticks: a line per decade, light lines at 2..9 × each decade.
  append(&s, "<g stroke-width=\"1\">\n");
  for (int e = ax.lo; e <= ax.hi; ++e) {
    const double x = ax.at(std::pow(10.0, e));
    append(&s, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ccc\"/>\n", x, kTop, x, kBottom);
    append(&s, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#000\"/>\n", x, kBottom, x, kBottom + 7);
    append(&s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"13\" text-anchor=\"middle\" stroke=\"none\">%s</text>\n", x,
           kBottom + 22, decade_label(e).c_str());
    for (int m = 2; m <= 9 && e < ax.hi; ++m) {
      const double xm = ax.at(m * std::pow(10.0, e));
      append(&s, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>\n", xm, kTop, xm, kBottom);
      append(&s, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#000\"/>\n", xm, kBottom, xm,
             kBottom + 4);
    }
  }
  for (int e = ay.lo; e <= ay.hi; ++e) {
    const double y = ay.at(std::pow(10.0, e));
    append(&s, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", kLeft, y, kRight, y);
    append(&s, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#000\"/>\n", kLeft - 7, y, kLeft, y);
    append(&s, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"end\" stroke=\"none\">%s</text>\n",
           kLeft - 11, y + 4, decade_label(e).c_str());
    for (int m = 2; m <= 9 && e < ay.hi; ++m) {
      const double ym = ay.at(m * std::pow(10.0, e));
      append(&s, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", kLeft, ym, kRight, ym);
      append(&s, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#000\"/>\n", kLeft - 4, ym, kLeft, ym);
    }
  }
  append(&s, "</g>\n");
  append(&s, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#000\"/>\n", kLeft,
         kTop, kRight - kLeft, kBottom - kTop);
  append(&s,
         "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte of "
         "unique K/V read)</text>\n",
         (kLeft + kRight) / 2, kBottom + 46);
  append(&s,
         "<text transform=\"translate(%.0f %.0f) rotate(-90)\" font-size=\"14\" text-anchor=\"middle\">GFLOP/s "
         "(visible query-key pairs only)</text>\n",
         kLeft - 58, (kTop + kBottom) / 2);

  // Roofs, clipped to the plot.
  append(&s,
         "<defs><clipPath id=\"plot\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/></clipPath></defs>\n",
         kLeft, kTop, kRight - kLeft, kBottom - kTop);
  append(&s, "<g clip-path=\"url(#plot)\" stroke-width=\"2.5\" fill=\"none\">\n");
  const double ridge = compute_roof && bw_roof ? r.peak_gflops / r.peak_gbps : compute_roof ? xmin : xmax;
  if (bw_roof) {
    const double xa = std::max(xmin, ymin / r.peak_gbps), xb = std::min(ridge, xmax);
    append(&s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"8 4\"/>\n",
           ax.at(xa), ay.at(xa * r.peak_gbps), ax.at(xb), ay.at(xb * r.peak_gbps));
  }
  if (compute_roof) {
    const double xa = std::max(ridge, xmin);
    append(&s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", ax.at(xa),
           ay.at(r.peak_gflops), kRight, ay.at(r.peak_gflops));
  }
  append(&s, "</g>\n");
  if (compute_roof) {
    // Just right of the ridge: prefill points crowd the roof's right end.
    append(&s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#333\">compute roof %s GFLOP/s</text>\n",
           std::max(ax.at(ridge), kLeft) + 8, ay.at(r.peak_gflops) - 7, figure(r.peak_gflops).c_str());
  }
  if (bw_roof) {
    // Along the 45°-in-decades line: its angle on screen follows the pixels per decade.
    const double angle = std::atan2((ay.p0 - ay.p1) / (ay.hi - ay.lo), (ax.p1 - ax.p0) / (ax.hi - ax.lo)) * 180 / M_PI;
    const double xa = std::max(xmin, ymin / r.peak_gbps);
    const double xt = std::min(xa * 1.25, compute_roof ? ridge / 3.0 : xmax / 3.0);
    append(&s,
           "<text transform=\"translate(%.1f %.1f) rotate(%.1f)\" font-size=\"13\" fill=\"#333\">bandwidth roof %s GB/s"
           "</text>\n",
           ax.at(xt) + 4, ay.at(xt * r.peak_gbps) - 8, -angle, figure(r.peak_gbps).c_str());
  }

  // From each point up (or down) to the attainable roof at its intensity: the gap its
  // percentage in the list measures.
  append(&s, "<g clip-path=\"url(#plot)\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\">\n");
  for (const RooflinePoint& p : r.points) {
    if (!(p.intensity > 0) || !(p.gflops > 0) || !(p.attainable_gflops > 0)) continue;
    const double x = ax.at(p.intensity);
    append(&s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x, ay.at(p.gflops), x,
           ay.at(p.attainable_gflops), colour(p.colour));
  }
  append(&s, "</g>\n");

  // Points, numbered; a number goes where it overlaps no other number or marker.
  const double legend_h = 18.0 * static_cast<double>(groups.size() + 5) + 8;
  const double lx = kRight - 246;
  std::vector<Box> taken = {{lx + 4, kBottom - legend_h - 4, kRight, kBottom}};  // the legend
  for (const RooflinePoint& p : r.points) {
    if (p.intensity > 0 && p.gflops > 0) {
      const double x = ax.at(p.intensity), y = ay.at(p.gflops);
      taken.push_back({x - 6, y - 6, x + 6, y + 6});
    }
  }
  append(&s, "<g stroke=\"#000\" stroke-width=\"1\">\n");
  for (size_t i = 0; i < r.points.size(); ++i) {
    const RooflinePoint& p = r.points[i];
    if (!(p.intensity > 0) || !(p.gflops > 0)) continue;
    const double x = ax.at(p.intensity), y = ay.at(p.gflops);
    if (p.decode) {
      append(&s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", x - 5, y - 5,
             colour(p.colour));
    } else {
      append(&s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\"/>\n", x, y, colour(p.colour));
    }
  }
  append(&s, "</g>\n");
  for (size_t i = 0; i < r.points.size(); ++i) {
    const RooflinePoint& p = r.points[i];
    if (!(p.intensity > 0) || !(p.gflops > 0)) continue;
    const double x = ax.at(p.intensity), y = ay.at(p.gflops);
    char label[24];
    std::snprintf(label, sizeof(label), "%zu", i + 1);
    const double w = 8.0 * static_cast<double>(std::strlen(label)), h = 13;
    static const double kOffsets[][2] = {{9, -4},  {9, 12},  {-9, -4}, {-9, 12},  {9, -18},  {9, 26},  {-9, -18},
                                         {-9, 26}, {24, -4}, {24, 12}, {-24, -4}, {-24, 12}, {9, -32}, {9, 40}};
    double bx = x + 9, by = y - 4;
    for (const auto& off : kOffsets) {
      const double cx = off[0] > 0 ? x + off[0] : x + off[0] - w;
      const Box b{cx, y + off[1] - h + 2, cx + w, y + off[1] + 2};
      bool free = b.x0 >= kLeft && b.x1 <= kRight && b.y0 >= kTop && b.y1 <= kBottom;
      for (const Box& t : taken) free = free && !b.hits(t);
      if (free) {
        bx = cx, by = y + off[1];
        break;
      }
    }
    taken.push_back({bx, by - h + 2, bx + w, by + 2});
    append(&s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\" fill=\"%s\">%s</text>\n", bx, by,
           colour(p.colour), label);
  }

  // Legend: groups (colour), marker shapes, roofs; in the plot's lower right corner, which
  // neither family reaches (decode sits at low intensity, prefill near the compute roof).
  double ly = kBottom - legend_h + 12;
  append(&s, "<g font-size=\"12\">\n");
  append(&s,
         "<rect x=\"%.0f\" y=\"%.0f\" width=\"236\" height=\"%.0f\" fill=\"white\" fill-opacity=\"0.9\" "
         "stroke=\"#999\"/>\n",
         lx + 4, kBottom - legend_h - 4, legend_h);
  for (const Group& g : groups) {
    append(&s, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx + 14, ly - 6,
           colour(g.colour));
    append(&s, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", lx + 34, ly + 4, xml(g.name).c_str());
    ly += 18;
  }
  append(&s, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"6\" fill=\"none\" stroke=\"#000\"/>\n", lx + 20, ly);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\">prefill (t_q = t_kv)</text>\n", lx + 34, ly + 4);
  ly += 18;
  append(&s, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#000\"/>\n", lx + 15,
         ly - 5);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\">decode (t_q = 1)</text>\n", lx + 34, ly + 4);
  ly += 18;
  append(&s,
         "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#555\" stroke-width=\"1.2\" "
         "stroke-dasharray=\"2 3\"/>\n",
         lx + 12, ly, lx + 28, ly);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\">to the roof at its FLOP/B</text>\n", lx + 34, ly + 4);
  ly += 18;
  append(&s, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#555\" stroke-width=\"2.5\"/>\n", lx + 12,
         ly, lx + 28, ly);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", lx + 34, ly + 4,
         compute_roof ? "FMA roof (measured)" : "no compute roof measured");
  ly += 18;
  append(&s,
         "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#555\" stroke-width=\"2.5\" "
         "stroke-dasharray=\"8 4\"/>\n",
         lx + 12, ly, lx + 28, ly);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", lx + 34, ly + 4,
         bw_roof ? "read bandwidth roof (measured)" : "no bandwidth roof measured");
  append(&s, "</g>\n");

  // The list: number, name, figures.
  append(&s, "<g font-size=\"12\">\n");
  append(&s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">cases</text>\n", kListX, kTop - 8);
  append(&s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"end\">GFLOP/s</text>\n",
         kWidth - 126, kTop - 8);
  append(&s,
         "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"end\">%% attainable</text>\n",
         kWidth - 16, kTop - 8);
  const double step = std::min(22.0, (kBottom - kTop) / std::max<double>(1.0, static_cast<double>(r.points.size())));
  for (size_t i = 0; i < r.points.size(); ++i) {
    const RooflinePoint& p = r.points[i];
    const double y = kTop + 10 + step * static_cast<double>(i);
    append(&s, "<text x=\"%.0f\" y=\"%.1f\" font-weight=\"bold\" fill=\"%s\" text-anchor=\"end\">%zu</text>\n",
           kListX + 18, y, colour(p.colour), i + 1);
    append(&s, "<text x=\"%.0f\" y=\"%.1f\">%s</text>\n", kListX + 26, y, xml(p.name).c_str());
    append(&s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kWidth - 126, y,
           figure(p.gflops).c_str());
    if (p.frac_peak >= 0) {  // and which roof it is of: the read roof (BW) or the FMA roof
      append(&s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f%% %s</text>\n", kWidth - 16, y,
             100.0 * p.frac_peak, p.memory_bound ? "BW" : "FMA");
    } else {
      append(&s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#888\">n/a</text>\n", kWidth - 16, y);
    }
  }
  append(&s, "</g>\n</svg>\n");
  return s;
}

Status write_roofline_svg(const char* path, const Roofline& roofline) {
  const std::string svg = roofline_svg(roofline);
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr)
    return Status::error(Code::kInvalidArgument, "svg file %s: cannot open: %s", path, std::strerror(errno));
  const bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  if (std::fclose(f) != 0 || !ok) {
    return Status::error(Code::kInvalidArgument, "svg file %s: write failed: %s", path, std::strerror(errno));
  }
  return Status();
}

}  // namespace headway::bench
