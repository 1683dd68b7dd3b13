// A roofline picture of one bench run as SVG: each case a numbered point at (arithmetic
// intensity, GFLOP/s) on log-log axes, under the measured compute roof (horizontal) and
// bandwidth roof (GB/s × FLOP/byte, a 45° line in decades), with a side list that names every
// point and its figures, a legend and a title. Self-contained SVG 1.1: no scripts, no fonts to
// fetch, so browsers, rsvg-convert and ImageMagick all draw it the same.
#pragma once

#include <span>
#include <string>

#include "headway/status.hpp"

namespace headway::bench {

struct RooflinePoint {
  const char* name;
  const char* group;  // legend entry of its colour, e.g. "prefill", "decode", "SmolLM2-135M"
  unsigned colour;    // palette index of the group: the same group keeps its colour across runs
  bool decode;        // square marker (memory-bound) instead of a circle
  double intensity;   // FLOP per byte of unique K/V
  double gflops;
  double frac_peak;  // of the roof that bounds it; < 0: unknown (not shown)
};

struct Roofline {
  std::string title;
  std::string subtitle;
  double peak_gflops = 0;  // <= 0: no compute roof drawn
  double peak_gbps = 0;    // <= 0: no bandwidth roof drawn
  std::span<const RooflinePoint> points;
};

std::string roofline_svg(const Roofline& roofline);
// Writes roofline_svg() to path; the error names the file.
Status write_roofline_svg(const char* path, const Roofline& roofline);

}  // namespace headway::bench
