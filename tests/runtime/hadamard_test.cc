// The normalized Walsh-Hadamard rotation (headway/hadamard.hpp): the block rule, H·H = I,
// orthonormality, and the fast transform against Sylvester's matrix in double for every power of
// two from 32 to 512 and for block-diagonal sizes.
#include "headway/hadamard.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tests/support/hadamard_reference.hpp"

namespace headway {
namespace {

std::vector<float> normal_row(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

constexpr uint32_t kSizes[] = {32, 64, 128, 256, 512, 96, 160, 288, 576};

TEST_CASE("hadamard_block: the largest power of two dividing n, at least 32") {
  CHECK(hadamard_block(32) == 32);
  CHECK(hadamard_block(64) == 64);
  CHECK(hadamard_block(128) == 128);
  CHECK(hadamard_block(512) == 512);
  CHECK(hadamard_block(96) == 32);
  CHECK(hadamard_block(192) == 64);
  CHECK(hadamard_block(576) == 64);
  CHECK(hadamard_block(288) == 32);
  for (uint32_t n : {0u, 1u, 16u, 40u, 48u, 80u, 100u, 112u, 129u}) {
    INFO("n " << n);
    CHECK(hadamard_block(n) == 0);
  }
}

TEST_CASE("the fast transform matches Sylvester's matrix in double, powers of two and blocks") {
  for (uint32_t n : kSizes) {
    INFO("n " << n << " block " << hadamard_block(n));
    const std::vector<float> x = normal_row(n, n);
    std::vector<float> y = x;
    hadamard_rotate(y.data(), n);
    const std::vector<double> xd(x.begin(), x.end());
    const std::vector<double> want = test::hadamard_reference(xd.data(), n);
    double worst = 0;
    for (uint32_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(y[i] - want[i]));
    CHECK(worst < 2e-6);
  }
}

TEST_CASE("H · H · x = x and norms and dot products are kept (orthonormal, symmetric)") {
  for (uint32_t n : kSizes) {
    INFO("n " << n);
    const std::vector<float> x = normal_row(n, 100 + n), z = normal_row(n, 200 + n);
    std::vector<float> hx = x, hz = z;
    hadamard_rotate(hx.data(), n);
    hadamard_rotate(hz.data(), n);
    double xx = 0, hxhx = 0, xz = 0, hxhz = 0;
    for (uint32_t i = 0; i < n; ++i) {
      xx += double{x[i]} * x[i];
      hxhx += double{hx[i]} * hx[i];
      xz += double{x[i]} * z[i];
      hxhz += double{hx[i]} * hz[i];
    }
    CHECK(hxhx == doctest::Approx(xx).epsilon(1e-5));
    CHECK(std::fabs(hxhz - xz) < 1e-4 * std::sqrt(xx * hxhx));
    std::vector<float> back = hx;
    hadamard_rotate(back.data(), n);
    double worst = 0;
    for (uint32_t i = 0; i < n; ++i) worst = std::max(worst, double{std::fabs(back[i] - x[i])});
    CHECK(worst < 2e-6);
  }
  // The columns of H_b are orthonormal: H e_i · H e_j = δ_ij (n 64, every pair).
  const uint32_t n = 64;
  std::vector<std::vector<float>> cols(n, std::vector<float>(n, 0.0f));
  for (uint32_t i = 0; i < n; ++i) {
    cols[i][i] = 1.0f;
    hadamard_rotate(cols[i].data(), n);
  }
  double worst = 0;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      double d = 0;
      for (uint32_t k = 0; k < n; ++k) d += double{cols[i][k]} * cols[j][k];
      worst = std::max(worst, std::fabs(d - (i == j ? 1.0 : 0.0)));
      CHECK(cols[i][j] == cols[j][i]);  // symmetric
    }
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("hadamard_rotate_heads: each head of each token on its own, the stride's gap untouched") {
  const uint32_t heads = 3, hd = 64, t = 2;
  const size_t stride = heads * hd + 5;
  std::vector<float> x = normal_row(static_cast<uint32_t>(t * stride), 7);
  const std::vector<float> orig = x;
  hadamard_rotate_heads(x.data(), t, stride, heads, hd);
  for (uint32_t tok = 0; tok < t; ++tok) {
    for (uint32_t h = 0; h < heads; ++h) {
      std::vector<float> want(orig.begin() + tok * stride + h * hd, orig.begin() + tok * stride + (h + 1) * hd);
      hadamard_rotate(want.data(), hd);
      for (uint32_t i = 0; i < hd; ++i) CHECK(x[tok * stride + h * hd + i] == want[i]);
    }
    for (size_t i = heads * hd; i < stride; ++i) CHECK(x[tok * stride + i] == orig[tok * stride + i]);
  }
}

}  // namespace
}  // namespace headway
