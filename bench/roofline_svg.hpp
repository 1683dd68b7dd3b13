// A roofline picture of one bench run as SVG: each case a numbered point at (arithmetic
// intensity, GFLOP/s) on log-log axes, under the measured compute roof (horizontal) and
// bandwidth roof (GB/s × FLOP/byte, a 45° line in decades), a dotted line from each point up to
// the roof above it (the attainable figure at its intensity), with a side list that names every
// point with its GFLOP/s and its percentage of that attainable figure, a legend and a title. Self-contained SVG 1.1: no
// scripts, no fonts to fetch, so browsers, rsvg-convert and ImageMagick all draw it the same.
#pragma once

#include <span>
#include <string>

#include "headway/status.hpp"

namespace headway::bench {

struct RooflinePoint {
  const char* name;
  const char* group;  // legend entry of its colour, e.g. "prefill", "decode", "SmolLM2-135M"
  unsigned colour;    // palette index of the group: the same group keeps its colour across runs
  bool decode;        // square marker (a decode step) instead of a circle (a prefill)
  double intensity;   // FLOP per byte of unique K/V
  double gflops;
  double attainable_gflops = -1;  // min(compute roof, bandwidth roof × intensity); < 0: no roofs
  bool memory_bound = false;      // the bandwidth roof is the one above the point
  double frac_peak = -1;          // gflops / attainable_gflops; < 0: unknown (not shown)
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
