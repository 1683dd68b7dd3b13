// The row norms (simd/norm/norm.h) on every SIMD target this machine supports: RMSNorm against
// the double value over row lengths with and without whole vectors, in place and not, with rows
// of tiny, huge and non-finite values; a row's bits do not depend on the rows beside it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "simd/norm/norm.h"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

using test::TargetScope;
using test::test_targets;

// w · x / sqrt(mean(x²) + eps) in double.
std::vector<double> rms_norm_reference(const float* x, const float* w, size_t n, float eps) {
  double ss = 0.0;
  for (size_t j = 0; j < n; ++j) ss += double{x[j]} * x[j];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  std::vector<double> y(n);
  for (size_t j = 0; j < n; ++j) y[j] = double{w[j]} * (double{x[j]} * inv);
  return y;
}

struct Rows {
  size_t t, n;
  std::vector<float> x, w;
  Rows(size_t t_, size_t n_, float scale, uint64_t seed) : t(t_), n(n_), x(t_ * n_), w(n_) {
    test::Rng rng(seed);
    for (float& v : x) v = scale * rng.normal();
    for (float& v : w) v = 1.0f + 0.5f * rng.normal();
  }
};

TEST_CASE("rms_norm: against the double value on every target, in place and not") {
  double worst = 0.0;
  for (const size_t n : {1u, 3u, 15u, 16u, 17u, 31u, 32u, 33u, 64u, 100u, 576u, 2048u}) {
    for (const float scale : {1.0f, 1e-20f, 1e15f}) {
      const Rows c(3, n, scale, n * 31 + static_cast<uint64_t>(std::log10(scale) + 40));
      const float eps = 1e-5f;
      for (const int64_t target : test_targets()) {
        TargetScope scope(target);
        INFO(test::target_label(target) << ", n " << n << ", x scale " << scale);
        // Out of place, between sentinels; then in place: the same bits.
        const float sentinel = -1234.5f;
        std::vector<float> y(c.t * n + 2, sentinel);
        simd::rms_norm(c.x.data(), c.w.data(), y.data() + 1, c.t, n, eps);
        CHECK(y.front() == sentinel);
        CHECK(y.back() == sentinel);
        std::vector<float> in_place = c.x;
        simd::rms_norm(in_place.data(), c.w.data(), in_place.data(), c.t, n, eps);
        CHECK(std::memcmp(in_place.data(), y.data() + 1, c.t * n * sizeof(float)) == 0);
        for (size_t r = 0; r < c.t; ++r) {
          const std::vector<double> ref = rms_norm_reference(c.x.data() + r * n, c.w.data(), n, eps);
          double err = 0.0, mag = 0.0;
          for (size_t j = 0; j < n; ++j) {
            err = std::fmax(err, std::fabs(y[1 + r * n + j] - ref[j]));
            mag = std::fmax(mag, std::fabs(ref[j]));
          }
          INFO("row " << r << ": max |err| " << err << " of values up to " << mag);
          // f32 sums of n squares: about log2(n) roundings of 2^-24 each, halved by the root; a
          // scale of 1e-20 makes the mean of squares smaller than eps, and the values tiny.
          CHECK(std::isfinite(err));
          CHECK(err <= 1e-6 * mag + 1e-30);
          if (mag > 0) worst = std::fmax(worst, err / mag);
        }
      }
    }
  }
  MESSAGE("worst error relative to the row's largest value " << worst);
}

TEST_CASE("rms_norm: a row's bits do not depend on the rows beside it, and NaN or inf stays in its row") {
  const Rows c(5, 77, 1.0f, 5);
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO(test::target_label(target));
    std::vector<float> all(c.x.size());
    simd::rms_norm(c.x.data(), c.w.data(), all.data(), c.t, c.n, 1e-6f);
    for (size_t r = 0; r < c.t; ++r) {
      std::vector<float> one(c.n);
      simd::rms_norm(c.x.data() + r * c.n, c.w.data(), one.data(), 1, c.n, 1e-6f);
      CHECK(std::memcmp(one.data(), all.data() + r * c.n, c.n * sizeof(float)) == 0);
    }
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      INFO("a value of row 2 is " << bad);
      std::vector<float> x = c.x, y(c.x.size());
      x[2 * c.n + 70] = bad;  // in the last partial vector on every target
      simd::rms_norm(x.data(), c.w.data(), y.data(), c.t, c.n, 1e-6f);
      for (size_t r = 0; r < c.t; ++r) {
        size_t nan = 0;
        for (size_t j = 0; j < c.n; ++j) nan += std::isnan(y[r * c.n + j]) ? 1 : 0;
        // A NaN sum makes the whole row NaN; inf gives x · 0 = 0 for the finite values and
        // inf · 0 = NaN for the inf: the row is lost either way, and no other row changes.
        if (r == 2) {
          CHECK(nan >= 1);
        } else {
          CHECK(nan == 0);
          CHECK(std::memcmp(y.data() + r * c.n, all.data() + r * c.n, c.n * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace headway
