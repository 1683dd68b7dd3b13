// The Gated DeltaNet kernels (simd/gated_delta/gated_delta.h) against a double-precision reference of the
// recurrent rule (transformers' torch_recurrent_gated_delta_rule for one value head) on every SIMD
// target this machine supports: the recurrent and the chunked form, head sizes with and without
// whole vectors, token counts around the chunk (64), strided rows, decays of 0 and of −30, a
// nonzero initial state; token splits that must give bitwise the same result; a state that
// continues across calls; and the argument checks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "simd/gated_delta/gated_delta.h"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

namespace hs = simd;

using test::TargetScope;
using test::test_targets;

// The decays a case draws: uniform in [−3, 0); all 0 (no forgetting: the state only accumulates);
// or every fourth token −30 (the state all but wiped: exp(−30) ≈ 1e-13; a chunk's cumulative decay
// then underflows f32's exp to 0) and the others uniform.
enum class Decay { kUniform, kZero, kWipe };

const char* decay_name(Decay d) {
  return d == Decay::kUniform ? "g in [-3,0)" : d == Decay::kZero ? "g = 0" : "g = -30";
}

// One head's inputs in strided rows (a few floats of padding each, as a [t, heads·d] tensor has)
// and the initial state.
struct Case {
  uint32_t dk, dv, t;
  size_t qks, vs, gbs, os;
  std::vector<float> q, k, v, g, beta, state;

  Case(uint32_t dk_, uint32_t dv_, uint32_t t_, Decay decay, uint64_t seed)
      : dk(dk_), dv(dv_), t(t_), qks(dk_ + 3), vs(dv_ + 1), gbs(2), os(dv_ + 2) {
    test::Rng rng(seed);
    q.assign(t * qks, 0.0f);
    k.assign(t * qks, 0.0f);
    v.assign(t * vs, 0.0f);
    g.assign(t * gbs, 0.0f);
    beta.assign(t * gbs, 0.0f);
    const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
    for (uint32_t r = 0; r < t; ++r) {
      double nq = 0.0, nk = 0.0;
      for (uint32_t i = 0; i < dk; ++i) {
        q[r * qks + i] = rng.normal();
        k[r * qks + i] = rng.normal();
        nq += static_cast<double>(q[r * qks + i]) * q[r * qks + i];
        nk += static_cast<double>(k[r * qks + i]) * k[r * qks + i];
      }
      for (uint32_t i = 0; i < dk; ++i) {  // L2-normalized, q scaled by dk^-1/2 (the caller's part)
        q[r * qks + i] = static_cast<float>(q[r * qks + i] / std::sqrt(nq) * scale);
        k[r * qks + i] = static_cast<float>(k[r * qks + i] / std::sqrt(nk));
      }
      for (uint32_t j = 0; j < dv; ++j) v[r * vs + j] = rng.normal();
      const float u = static_cast<float>(-3.0 * rng.uniform());
      g[r * gbs] = decay == Decay::kZero ? 0.0f : decay == Decay::kWipe && r % 4 == 3 ? -30.0f : u;
      beta[r * gbs] = static_cast<float>(rng.uniform());
    }
    state.resize(static_cast<size_t>(dk) * dv);
    for (float& s : state) s = 0.5f * rng.normal();
  }

  // Tokens [r0, r0 + n) into out (rows of os floats, token r0 at out) and state.
  hs::GatedDeltaArgs args(float* st, float* out, uint32_t r0, uint32_t n) const {
    hs::GatedDeltaArgs a;
    a.state = st;
    a.dk = dk;
    a.dv = dv;
    a.q = q.data() + r0 * qks;
    a.k = k.data() + r0 * qks;
    a.qk_stride = qks;
    a.v = v.data() + r0 * vs;
    a.v_stride = vs;
    a.g = g.data() + r0 * gbs;
    a.beta = beta.data() + r0 * gbs;
    a.gb_stride = gbs;
    a.out = out;
    a.out_stride = os;
    a.t = n;
    return a;
  }
};

// The recurrent rule in double over the first n tokens: the outputs [n, dv], the final state [dk, dv],
// and the scales the errors are measured against: per token, max_j Σ_i |S[i][j]·q[i]| (the size of
// the terms o_r's sums add, which the f32 rounding of S and q scales with: an output that cancels
// to near 0 still carries their error), and for the state, its largest |S[i][j]|.
struct Reference {
  std::vector<double> out, state, out_scale, state_scale;
};

Reference reference(const Case& c, uint32_t n) {
  const uint32_t dk = c.dk, dv = c.dv;
  Reference ref;
  std::vector<double>& st = ref.state;
  st.assign(c.state.begin(), c.state.end());
  ref.out.assign(static_cast<size_t>(n) * dv, 0.0);
  ref.out_scale.assign(n, 1e-30);
  std::vector<double> u(dv);
  for (uint32_t r = 0; r < n; ++r) {
    const float* q = c.q.data() + r * c.qks;
    const float* k = c.k.data() + r * c.qks;
    const float* v = c.v.data() + r * c.vs;
    const double e = std::exp(static_cast<double>(c.g[r * c.gbs])), b = c.beta[r * c.gbs];
    for (double& s : st) s *= e;
    for (uint32_t j = 0; j < dv; ++j) {
      u[j] = 0.0;
      for (uint32_t i = 0; i < dk; ++i) u[j] += st[i * dv + j] * k[i];
    }
    for (uint32_t j = 0; j < dv; ++j) {
      const double d = b * (v[j] - u[j]);
      for (uint32_t i = 0; i < dk; ++i) st[i * dv + j] += k[i] * d;
    }
    for (uint32_t j = 0; j < dv; ++j) {
      double o = 0.0, mag = 0.0;
      for (uint32_t i = 0; i < dk; ++i) {
        o += st[i * dv + j] * q[i];
        mag += std::fabs(st[i * dv + j] * q[i]);
      }
      ref.out[r * dv + j] = o;
      ref.out_scale[r] = std::fmax(ref.out_scale[r], mag);
    }
  }
  double smax = 1e-30;
  for (double s : st) {
    if (std::fabs(s) > smax) smax = std::fabs(s);
  }
  ref.state_scale.assign(1, smax);
  return ref;
}

// The error bound, relative to the reference's scales. Both forms are f32: the recurrent one rounds
// ~dk terms per sum and carries the state through t steps; the chunked one also solves a 64-row
// triangular system and forms the state's update from 64-term sums. Measured over these cases on
// x86 (SCALAR to AVX3_DL, GCC 12): recurrent ≤ 5.1e-7, chunked ≤ 1.0e-6. 1e-5 leaves ten times that
// for other targets' summation orders, and is far below what a real fault gives: the intra-chunk
// mask without its diagonal errs by ≥ 4e-4 in every case, and the decays exp(c_r − c_s) taken as
// differences of f32 cumulative sums (transformers' way) by up to 4e-5 with g = −30.
constexpr double kBound = 1e-5;

// max over rows of max_j |got − want| / scale[row] (rows of `cols` values; got's of `stride`).
double row_error(const float* got, size_t stride, const std::vector<double>& want, const std::vector<double>& scale,
                 size_t rows, size_t cols) {
  double worst = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    double diff = 0.0;
    for (size_t j = 0; j < cols; ++j) {
      const double d = std::fabs(got[r * stride + j] - want[r * cols + j]);
      // A NaN fails outright (fmax would drop it). The early return also keeps GCC 12 for AArch64
      // from vectorizing a double fmax reduction, which it crashes on (tests/CMakeLists.txt).
      if (std::isnan(d)) return std::numeric_limits<double>::infinity();
      if (d > diff) diff = d;
    }
    worst = std::fmax(worst, diff / scale[r]);
  }
  return worst;
}

// The output's and the state's errors, the larger.
double error(const float* out, size_t os, const std::vector<float>& st, const Reference& ref, size_t t, size_t dv) {
  return std::fmax(row_error(out, os, ref.out, ref.out_scale, t, dv),
                   row_error(st.data(), st.size(), ref.state, ref.state_scale, 1, st.size()));
}

// The padding of each output row (past dv) keeps its sentinel: nothing is written there.
bool padding_kept(const std::vector<float>& out, size_t rows, size_t dv, size_t stride, float sentinel) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = dv; j < stride; ++j) {
      if (std::memcmp(&out[r * stride + j], &sentinel, sizeof sentinel) != 0) return false;
    }
  }
  return true;
}

// Scratch full of NaN: a read of anything the chunk did not write first poisons the result.
std::vector<float> nan_scratch(uint32_t dk, uint32_t dv) {
  return std::vector<float>(headway::gated_delta_chunk_scratch_floats(dk, dv), std::numeric_limits<float>::quiet_NaN());
}

struct Shape {
  uint32_t dk, dv;
};
constexpr Shape kShapes[] = {{128, 128}, {64, 64}, {32, 48}, {5, 3}};
constexpr uint32_t kTokens[] = {1, 2, 63, 64, 65, 130};

TEST_CASE("gated delta: recurrent and chunked match the double reference on every target") {
  double worst_rec = 0.0, worst_chunk = 0.0;
  for (const Shape sh : kShapes) {
    for (const uint32_t t : kTokens) {
      for (const Decay decay : {Decay::kUniform, Decay::kZero, Decay::kWipe}) {
        const Case c(sh.dk, sh.dv, t, decay, sh.dk * 7919 + sh.dv * 131 + t * 7 + static_cast<int>(decay));
        const Reference ref = reference(c, t);
        for (const int64_t target : test_targets()) {
          TargetScope scope(target);
          INFO(test::target_label(target)
               << ", dk " << sh.dk << " dv " << sh.dv << " t " << t << ", " << decay_name(decay));
          const float sentinel = -1234.5f;
          std::vector<float> out(t * c.os, sentinel), st = c.state;
          const hs::GatedDeltaArgs a = c.args(st.data(), out.data(), 0, t);
          REQUIRE(hs::gated_delta_args_error(a) == nullptr);
          hs::gated_delta_recurrent(a);
          const double rec = error(out.data(), c.os, st, ref, t, c.dv);
          CHECK(rec <= kBound);
          CHECK(padding_kept(out, t, c.dv, c.os, sentinel));
          worst_rec = std::fmax(worst_rec, rec);

          std::vector<float> out2(t * c.os, sentinel), st2 = c.state, scratch = nan_scratch(c.dk, c.dv);
          hs::gated_delta_chunked(c.args(st2.data(), out2.data(), 0, t), scratch.data());
          const double chunk = error(out2.data(), c.os, st2, ref, t, c.dv);
          CHECK(chunk <= kBound);
          CHECK(padding_kept(out2, t, c.dv, c.os, sentinel));
          worst_chunk = std::fmax(worst_chunk, chunk);

          // Deterministic: a second call on the same inputs gives bitwise the same output and state.
          std::vector<float> out3(t * c.os, sentinel), st3 = c.state;
          scratch = nan_scratch(c.dk, c.dv);
          hs::gated_delta_chunked(c.args(st3.data(), out3.data(), 0, t), scratch.data());
          CHECK(std::memcmp(out3.data(), out2.data(), out2.size() * sizeof(float)) == 0);
          CHECK(std::memcmp(st3.data(), st2.data(), st2.size() * sizeof(float)) == 0);
        }
      }
    }
  }
  MESSAGE("worst relative error: recurrent " << worst_rec << ", chunked " << worst_chunk);
}

TEST_CASE("gated delta: recurrent over split tokens is bitwise one call") {
  for (const Shape sh : kShapes) {
    const uint32_t t = 130;
    const Case c(sh.dk, sh.dv, t, Decay::kUniform, 99 + sh.dk);
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      INFO(test::target_label(target) << ", dk " << sh.dk << " dv " << sh.dv);
      std::vector<float> out(t * c.os, 0.0f), st = c.state;
      hs::gated_delta_recurrent(c.args(st.data(), out.data(), 0, t));
      std::vector<float> out2(t * c.os, 0.0f), st2 = c.state;
      uint32_t r0 = 0;
      for (const uint32_t n : {1u, 63u, 64u, 2u}) {
        hs::gated_delta_recurrent(c.args(st2.data(), out2.data() + r0 * c.os, r0, n));
        r0 += n;
      }
      REQUIRE(r0 == t);
      CHECK(std::memcmp(out.data(), out2.data(), out.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(st.data(), st2.data(), st.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("gated delta: a state continues across calls (65 tokens then 1 is one call of 66)") {
  for (const Shape sh : kShapes) {
    const uint32_t t = 66;
    const Case c(sh.dk, sh.dv, t, Decay::kUniform, 7 + sh.dv);
    const Reference ref = reference(c, t);
    for (const int64_t target : test_targets()) {
      TargetScope scope(target);
      INFO(test::target_label(target) << ", dk " << sh.dk << " dv " << sh.dv);
      // One chunked call of 66; chunked 65 then chunked 1; chunked 65 then recurrent 1 (a prefill,
      // then a decode step).
      std::vector<float> scratch = nan_scratch(c.dk, c.dv);
      std::vector<float> one(t * c.os, 0.0f), st_one = c.state;
      hs::gated_delta_chunked(c.args(st_one.data(), one.data(), 0, t), scratch.data());
      for (const bool decode : {false, true}) {
        INFO((decode ? "then recurrent" : "then chunked"));
        std::vector<float> two(t * c.os, 0.0f), st_two = c.state;
        hs::gated_delta_chunked(c.args(st_two.data(), two.data(), 0, 65), scratch.data());
        const hs::GatedDeltaArgs last = c.args(st_two.data(), two.data() + 65 * c.os, 65, 1);
        if (decode) {
          hs::gated_delta_recurrent(last);
        } else {
          hs::gated_delta_chunked(last, scratch.data());
        }
        Reference ref_one = ref;  // the one call, with the reference's scales
        for (uint32_t r = 0; r < t; ++r) {
          for (uint32_t j = 0; j < c.dv; ++j) ref_one.out[r * c.dv + j] = one[r * c.os + j];
        }
        ref_one.state.assign(st_one.begin(), st_one.end());
        CHECK(error(two.data(), c.os, st_two, ref_one, t, c.dv) <= kBound);
        CHECK(error(two.data(), c.os, st_two, ref, t, c.dv) <= kBound);
      }
    }
  }
}

TEST_CASE("gated delta: gated_delta_args_error names the bad argument") {
  const Case c(8, 4, 2, Decay::kUniform, 5);
  std::vector<float> out(2 * c.os), st = c.state;
  const hs::GatedDeltaArgs good = c.args(st.data(), out.data(), 0, 2);
  CHECK(hs::gated_delta_args_error(good) == nullptr);
  const auto error_of = [&](auto&& edit) {
    hs::GatedDeltaArgs a = good;
    edit(a);
    const char* e = hs::gated_delta_args_error(a);
    return std::string(e != nullptr ? e : "(none)");
  };
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.dk = 0; }) == "dk is 0");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.dv = 0; }) == "dv is 0");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.state = nullptr; }) == "state is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.q = nullptr; }) == "q is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.k = nullptr; }) == "k is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.v = nullptr; }) == "v is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.g = nullptr; }) == "g is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.beta = nullptr; }) == "beta is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.out = nullptr; }) == "out is null");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.qk_stride = a.dk - 1; }) == "qk_stride is less than dk");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.v_stride = a.dv - 1; }) == "v_stride is less than dv");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.out_stride = a.dv - 1; }) == "out_stride is less than dv");
  CHECK(error_of([](hs::GatedDeltaArgs& a) { a.gb_stride = 0; }) == "gb_stride is 0");
  // No tokens: usable with null pointers, and the calls touch nothing.
  CHECK(error_of([](hs::GatedDeltaArgs& a) {
          a.t = 0;
          a.state = nullptr;
          a.q = a.k = a.v = a.g = a.beta = nullptr;
          a.out = nullptr;
        }) == "(none)");
  CHECK(error_of([](hs::GatedDeltaArgs& a) {
          a.t = 0;
          a.dk = 0;
        }) == "dk is 0");
  hs::GatedDeltaArgs none;
  none.dk = 8;
  none.dv = 4;
  hs::gated_delta_recurrent(none);
  hs::gated_delta_chunked(none, nullptr);
  // The chunked scratch is fixed per head shape: 4 vectors of 64, three 64 × 64 matrices, and 64 rows
  // of dv and of dk, each rounded up to 16 floats.
  CHECK(headway::gated_delta_chunk_scratch_floats(128, 128) == 4 * 64 + 3 * 64 * 64 + 64 * (128 + 128));
  CHECK(headway::gated_delta_chunk_scratch_floats(5, 3) == 4 * 64 + 3 * 64 * 64 + 64 * (16 + 16));
}

}  // namespace
}  // namespace headway
