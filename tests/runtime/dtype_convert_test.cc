// f32 ↔ f16 / bf16 conversions: every 16-bit pattern, every rounding boundary, and random f32
// patterns against an independent reference (nearest representable value found in double).
#include "headway/dtype_convert.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace headway {
namespace {

// Constant-evaluated: the conversions are usable in static_assert (bare-metal tables).
static_assert(f32_to_f16_bits(1.0f) == 0x3c00);
static_assert(f32_to_bf16_bits(1.0f) == 0x3f80);
static_assert(f16_bits_to_f32(0x0001) == 0x1p-24f);
static_assert(bf16_bits_to_f32(0xc000) == -2.0f);

bool is_f16_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// The exact value of a finite f16, in double, from the definition of binary16.
double f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  const double mag = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

// Round |x| to the nearest of the non-negative patterns 0..max_finite (whose values increase
// with the pattern), ties to the even pattern, beyond max + half an ulp to inf. `value` maps a
// pattern to its double value; `ulp_top` is the spacing just above max_finite.
template <class ValueFn>
uint16_t reference_round(double ax, uint16_t max_finite, uint16_t inf, double ulp_top, ValueFn value) {
  const double top = value(max_finite);
  if (ax >= top + ulp_top / 2) return inf;  // the tie at top + ulp/2 goes to inf (max is odd)
  uint16_t lo = 0, hi = max_finite;         // largest pattern with value <= ax
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (value(mid) <= ax) lo = mid;
    else hi = static_cast<uint16_t>(mid - 1);
  }
  if (lo == max_finite) return lo;
  const double below = ax - value(lo), above = value(static_cast<uint16_t>(lo + 1)) - ax;
  if (below < above) return lo;
  if (above < below) return static_cast<uint16_t>(lo + 1);
  return (lo & 1u) ? static_cast<uint16_t>(lo + 1) : lo;
}

uint16_t reference_f16(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(static_cast<double>(x));
  return static_cast<uint16_t>(sign | reference_round(ax, 0x7bff, 0x7c00, std::ldexp(1.0, 5), f16_value));
}

uint16_t reference_bf16(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(static_cast<double>(x));
  auto value = [](uint16_t b) { return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(b) << 16)); };
  return static_cast<uint16_t>(sign | reference_round(ax, 0x7f7f, 0x7f80, std::ldexp(1.0, 120), value));
}

TEST_CASE("every f16 pattern widens exactly and narrows back to itself") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = f16_bits_to_f32(h);
    const uint16_t back = f32_to_f16_bits(f);
    if (is_f16_nan(h)) {
      INFO("pattern " << i);
      CHECK(std::isnan(f));
      CHECK(std::signbit(f) == ((h & 0x8000) != 0));
      CHECK(back == (h | 0x200));  // quieted, payload kept
      continue;
    }
    if (back != h || (((h >> 10) & 0x1f) != 0x1f && static_cast<double>(f) != f16_value(h))) {
      INFO("pattern " << i << " -> " << f << " -> " << back);
      CHECK(back == h);
      CHECK(static_cast<double>(f) == f16_value(h));
    }
  }
  CHECK(f16_bits_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(f16_bits_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("every bf16 pattern widens exactly and narrows back to itself") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const float f = bf16_bits_to_f32(b);
    const uint16_t back = f32_to_bf16_bits(f);
    if (is_bf16_nan(b)) {
      if (!std::isnan(f) || back != (b | 0x40)) {
        INFO("pattern " << i);
        CHECK(std::isnan(f));
        CHECK(back == (b | 0x40));
      }
      continue;
    }
    if (back != b || std::bit_cast<uint32_t>(f) != (i << 16)) {
      INFO("pattern " << i);
      CHECK(back == b);
    }
  }
}

TEST_CASE("f32 to f16 rounds to nearest even at every boundary") {
  // For every pair of neighbouring finite f16 values, the f32 values at the midpoint and one
  // f32 ulp either side of it, plus the values themselves and their f32 neighbours.
  int failures = 0;
  for (uint32_t i = 0; i <= 0x7bff; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const double lo = f16_value(h);
    const double hi = i == 0x7bff ? 65536.0 : f16_value(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: f32 has 13 more bits
    const float probes[] = {static_cast<float>(lo),
                            std::nextafter(static_cast<float>(lo), 0.0f),
                            std::nextafter(static_cast<float>(lo), 1e9f),
                            mid,
                            std::nextafter(mid, 0.0f),
                            std::nextafter(mid, 1e9f)};
    for (float p : probes) {
      for (float x : {p, -p}) {
        const uint16_t got = f32_to_f16_bits(x), want = reference_f16(x);
        if (got != want && failures++ < 10) {
          INFO("x = " << x << " bits " << std::bit_cast<uint32_t>(x));
          CHECK(got == want);
        }
      }
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("f32 to f16 and bf16 match the reference on random f32 patterns") {
  std::mt19937 rng(12345);
  int failures = 0;
  for (int n = 0; n < 2000000; ++n) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    const float x = std::bit_cast<float>(bits);
    if (std::isnan(x)) {
      CHECK(is_f16_nan(f32_to_f16_bits(x)));
      CHECK(is_bf16_nan(f32_to_bf16_bits(x)));
      continue;
    }
    // Half of the draws are pulled into the f16 range (exponent 100..143) where it matters.
    const float y = (n & 1) ? std::bit_cast<float>((bits & 0x807fffffu) | ((100u + (bits >> 23) % 44u) << 23)) : x;
    const uint16_t h = f32_to_f16_bits(y), hr = reference_f16(y);
    const uint16_t b = f32_to_bf16_bits(x), br = reference_bf16(x);
    if ((h != hr || b != br) && failures++ < 10) {
      INFO("bits " << bits);
      CHECK(h == hr);
      CHECK(b == br);
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("known values") {
  CHECK(f32_to_f16_bits(0.0f) == 0x0000);
  CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_f16_bits(-2.0f) == 0xc000);
  CHECK(f32_to_f16_bits(0.1f) == 0x2e66);
  CHECK(f32_to_f16_bits(65504.0f) == 0x7bff);
  CHECK(f32_to_f16_bits(65519.996f) == 0x7bff);
  CHECK(f32_to_f16_bits(65520.0f) == 0x7c00);
  CHECK(f32_to_f16_bits(1e6f) == 0x7c00);
  CHECK(f32_to_f16_bits(-1e6f) == 0xfc00);
  CHECK(f32_to_f16_bits(FLT_MAX) == 0x7c00);
  CHECK(f32_to_f16_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(f32_to_f16_bits(0x1p-14f) == 0x0400);  // smallest normal
  CHECK(f32_to_f16_bits(0x1p-15f) == 0x0200);  // subnormal
  CHECK(f32_to_f16_bits(0x1p-24f) == 0x0001);  // smallest subnormal
  CHECK(f32_to_f16_bits(0x1p-25f) == 0x0000);  // tie between 0 and 2^-24: even (0)
  CHECK(f32_to_f16_bits(0x1.8p-25f) == 0x0001);
  CHECK(f32_to_f16_bits(0x1.8p-24f) == 0x0002);    // tie between 1 and 2: even (2)
  CHECK(f32_to_f16_bits(0x1.ff8p-15f) == 0x03ff);  // largest subnormal
  CHECK(f32_to_f16_bits(0x1.ffap-15f) == 0x03ff);
  CHECK(f32_to_f16_bits(0x1.ffcp-15f) == 0x0400);  // tie: rounds up into the smallest normal
  CHECK(f32_to_f16_bits(1e-8f) == 0x0000);
  CHECK(f32_to_f16_bits(FLT_TRUE_MIN) == 0x0000);
  CHECK(f32_to_f16_bits(1.0f + 0x1p-11f) == 0x3c00);  // tie, 1.0 is even
  CHECK(f32_to_f16_bits(1.0f + 0x3p-11f) == 0x3c02);  // tie, 1 + 2^-10 is odd: up
  CHECK(is_f16_nan(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_f16_nan(f32_to_f16_bits(std::bit_cast<float>(0x7f800001u))));  // payload only in low bits
  CHECK(f16_bits_to_f32(0x3c00) == 1.0f);
  CHECK(f16_bits_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_bits_to_f32(0x03ff) == 0x1.ff8p-15f);
  CHECK(std::signbit(f16_bits_to_f32(0x8000)));

  CHECK(f32_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(f32_to_bf16_bits(3.14159265f) == 0x4049);
  CHECK(f32_to_bf16_bits(0.1f) == 0x3dcd);
  CHECK(f32_to_bf16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_bf16_bits(FLT_MAX) == 0x7f80);                            // above the largest bf16 + half ulp: inf
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie, even
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie, odd: up
  CHECK(f32_to_bf16_bits(FLT_TRUE_MIN) == 0x0000);
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x00008000u)) == 0x0000);  // subnormal tie
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x00018000u)) == 0x0002);
  CHECK(is_bf16_nan(f32_to_bf16_bits(std::bit_cast<float>(0x7f800001u))));
  CHECK(is_bf16_nan(f32_to_bf16_bits(std::bit_cast<float>(0xffc00000u))));
  CHECK(bf16_bits_to_f32(0x3f80) == 1.0f);
}

TEST_CASE("bulk helpers convert every element") {
  const float src[5] = {1.0f, -0.5f, 0.1f, 70000.0f, 0x1p-24f};
  uint16_t h[5] = {}, b[5] = {}, hb[5] = {};
  float back[5] = {};
  f32_to_f16(src, h, 5);
  f32_to_bf16(src, b, 5);
  f16_to_bf16(h, hb, 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(h[i] == f32_to_f16_bits(src[i]));
    CHECK(b[i] == f32_to_bf16_bits(src[i]));
    CHECK(hb[i] == f32_to_bf16_bits(f16_bits_to_f32(h[i])));
  }
  f16_to_f32(h, back, 5);
  CHECK(back[0] == 1.0f);
  CHECK(back[3] == std::numeric_limits<float>::infinity());
  bf16_to_f32(b, back, 5);
  CHECK(back[1] == -0.5f);
}

}  // namespace
}  // namespace headway
