// The gate activations (simd/activation/activation.h) on every SIMD target this machine supports:
// SiLU(g) · up against g / (1 + exp(−g)) · up in double, over row lengths with and without whole
// vectors, gates from −100 to 100 and the non-finite ones; a value's bits do not depend on where
// it sits in its row (body or last partial vector); the up half and the gate row's neighbours are
// left as they were.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "simd/activation/activation.h"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

using test::TargetScope;
using test::test_targets;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double silu_mul_reference(float g, float u) { return double{g} / (1.0 + std::exp(-double{g})) * double{u}; }

// Within a few f32 ulp of the double value, or NaN where it is NaN. A gate below −86.5 may give 0
// where the value is under 1e-36.
bool close(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y);
  if (std::isinf(ref)) return y == ref;
  return std::fabs(y - ref) <= 1e-6 * std::fabs(ref) + 1e-35;
}

// A row of n gates and ups: normal draws scaled by 4, and every seventh gate one of the edges.
void fill(uint32_t n, uint64_t seed, std::vector<float>* gate, std::vector<float>* up) {
  static constexpr float kEdges[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 20.0f,  -20.0f,
                                     86.0f, -86.0f, 87.0f,  -87.0f,  100.0f, -100.0f};
  test::Rng rng(seed);
  gate->resize(n);
  up->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    (*gate)[i] = i % 7 == 3 ? kEdges[(i / 7) % (sizeof(kEdges) / sizeof(kEdges[0]))] : 4.0f * rng.normal();
    (*up)[i] = rng.normal();
  }
}

TEST_CASE("silu_mul: SiLU(gate) · up against the double value on every target") {
  double worst = 0.0;
  for (const uint32_t n : {1u, 3u, 4u, 7u, 15u, 16u, 17u, 31u, 33u, 100u, 1536u}) {
    std::vector<float> gate, up;
    fill(n, 1000 + n, &gate, &up);
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      INFO(test::target_label(target) << ", n " << n);
      // The row sits between sentinels, so a write past either end shows.
      const float sentinel = -1234.5f;
      std::vector<float> row(n + 2, sentinel);
      std::memcpy(row.data() + 1, gate.data(), n * sizeof(float));
      const std::vector<float> up_before = up;
      simd::silu_mul(row.data() + 1, up.data(), n);
      CHECK(row[0] == sentinel);
      CHECK(row[n + 1] == sentinel);
      CHECK(std::memcmp(up.data(), up_before.data(), n * sizeof(float)) == 0);
      for (uint32_t i = 0; i < n; ++i) {
        const double ref = silu_mul_reference(gate[i], up[i]);
        INFO("gate " << gate[i] << " up " << up[i] << " gives " << row[1 + i] << ", double " << ref);
        CHECK(close(row[1 + i], ref));
        if (std::isfinite(ref) && std::fabs(ref) > 1e-30)
          worst = std::fmax(worst, std::fabs(row[1 + i] - ref) / std::fabs(ref));
      }
    }
  }
  MESSAGE("worst relative error " << worst);
}

TEST_CASE("silu_mul: non-finite gates and ups") {
  // (gate, up): what g / (1 + exp(−g)) · up gives in IEEE arithmetic.
  const float gates[] = {kNaN, 1.0f, kInf, kInf, -kInf, 2.0f, -2.0f, kNaN};
  const float ups[] = {1.0f, kNaN, 1.0f, 0.0f, 1.0f, kInf, -kInf, kNaN};
  constexpr uint32_t n = sizeof(gates) / sizeof(gates[0]);
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(test::target_label(target));
    std::vector<float> row(gates, gates + n), up(ups, ups + n);
    simd::silu_mul(row.data(), up.data(), n);
    CHECK(std::isnan(row[0]));
    CHECK(std::isnan(row[1]));
    CHECK(row[2] == kInf);
    CHECK(std::isnan(row[3]));  // inf · 0
    CHECK(std::isnan(row[4]));  // −inf · σ(−inf) = −inf · 0
    CHECK(row[5] == kInf);
    CHECK(row[6] == kInf);  // SiLU(−2) < 0 times −inf
    CHECK(std::isnan(row[7]));
  }
}

TEST_CASE("silu_mul: a value's bits do not depend on its place in the row") {
  std::vector<float> gate, up;
  fill(53, 7, &gate, &up);
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(test::target_label(target));
    std::vector<float> whole = gate;
    simd::silu_mul(whole.data(), up.data(), 53);
    // The same values from every offset: each lands in a body vector in one call and in the last
    // partial vector in another.
    for (uint32_t offset = 1; offset < 20; ++offset) {
      INFO("offset " << offset);
      std::vector<float> part(gate.begin() + offset, gate.end());
      simd::silu_mul(part.data(), up.data() + offset, 53 - offset);
      CHECK(std::memcmp(part.data(), whole.data() + offset, (53 - offset) * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("silu_mul: n = 0 reads and writes nothing") {
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    simd::silu_mul(nullptr, nullptr, 0);
  }
}

}  // namespace
}  // namespace headway
