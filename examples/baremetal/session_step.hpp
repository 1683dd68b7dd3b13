// One step of a firmware's Session against its golden rows (main.cc's stack and mla_run.cc's).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "headway/session.hpp"
#include "instruction_count.hpp"

namespace firmware {

// Runs tokens [first, first + n) of input [tokens, width] through the Session into y (n rows),
// adds the SysTick ticks of the Session's call (not of the comparison) to *ticks, and raises
// *err to the largest error of those rows against want's, relative to their largest magnitude
// (at least 1); a NaN sticks.
inline headway::Status session_step(headway::Session& s, const float* input, const float* want, size_t width,
                                    uint32_t first, uint32_t n, float* y, double* err, uint64_t* ticks) {
  const uint64_t t0 = cortex_m::systick_ticks();
  HEADWAY_RETURN_IF_ERROR(s.prefill(input + first * width, n, y));
  *ticks += cortex_m::systick_ticks() - t0;
  want += first * width;
  double scale = 1.0;
  for (size_t i = 0; i < n * width; ++i)
    scale = std::fabs(double{want[i]}) > scale ? std::fabs(double{want[i]}) : scale;
  for (size_t i = 0; i < n * width; ++i) {
    const double d = std::fabs(double{y[i]} - double{want[i]}) / scale;
    if (!(d <= *err)) *err = d;
  }
  return headway::Status();
}

}  // namespace firmware
