// The Highway dense kernel (simd/matmul/matmul.h) against a double-precision reference on every SIMD
// target this machine supports: GEMV (t = 1) and GEMM (register blocks and their ragged edges),
// f32/f16/bf16 weights, strided rows, and row splits that must give bitwise the same y.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "simd/attention/attention.h"
#include "simd/matmul/matmul.h"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

namespace hs = simd;

using test::TargetScope;
using test::test_targets;

const char* wname(hs::WeightType t) {
  return t == hs::WeightType::kF32 ? "f32" : t == hs::WeightType::kF16 ? "f16" : "bf16";
}

TEST_CASE("matmul matches the double reference on every target: GEMV, GEMM, ragged edges, strides, dtypes") {
  const size_t ts[] = {1, 2, 3, 4, 5, 17, 33, 70};
  const size_t ins[] = {1, 3, 16, 17, 64, 100};
  const size_t outs[] = {1, 4, 5, 67};
  for (const int64_t target : test_targets()) {
    TargetScope scope(target);
    INFO("target " << hs::matmul_target_name());
    for (hs::WeightType wt : {hs::WeightType::kF32, hs::WeightType::kF16, hs::WeightType::kBF16}) {
      for (size_t t : ts) {
        for (size_t in : ins) {
          for (size_t out : outs) {
            INFO(wname(wt) << " t " << t << " in " << in << " out " << out);
            test::Rng rng(t * 1000 + in * 10 + out);
            const size_t xs = in + 3, ws = in + 5, ys = out + 2;
            std::vector<float> x(t * xs), wf(out * ws);
            for (float& v : x) v = rng.normal();
            for (float& v : wf) v = rng.normal();
            std::vector<uint16_t> wh(out * ws);
            std::vector<double> wd(out * ws);
            for (size_t i = 0; i < wf.size(); ++i) {
              if (wt == hs::WeightType::kF16) {
                wh[i] = f32_to_f16_bits(wf[i]);
                wd[i] = f16_bits_to_f32(wh[i]);
              } else if (wt == hs::WeightType::kBF16) {
                wh[i] = f32_to_bf16_bits(wf[i]);
                wd[i] = bf16_bits_to_f32(wh[i]);
              } else {
                wd[i] = wf[i];
              }
            }
            hs::MatmulArgs a;
            a.x = x.data();
            a.x_stride = xs;
            a.w = wt == hs::WeightType::kF32 ? static_cast<const void*>(wf.data()) : wh.data();
            a.w_type = wt;
            a.w_stride = ws;
            std::vector<float> y(t * ys, 7.0f), y2(t * ys, 7.0f);
            a.y = y.data();
            a.y_stride = ys;
            a.t = t;
            a.in = in;
            a.out = out;
            REQUIRE(hs::matmul_args_error(a) == nullptr);
            hs::matmul(a, 0, out);
            double worst = 0.0;
            for (size_t i = 0; i < t; ++i) {
              for (size_t o = 0; o < out; ++o) {
                double s = 0.0, mag = 0.0;
                for (size_t k = 0; k < in; ++k) {
                  s += x[i * xs + k] * wd[o * ws + k];
                  mag += std::fabs(x[i * xs + k] * wd[o * ws + k]);
                }
                worst = std::max(worst, std::fabs(y[i * ys + o] - s) / (mag + 1e-30));
              }
              for (size_t o = out; o < ys; ++o) CHECK(y[i * ys + o] == 7.0f);  // padding untouched
            }
            CHECK(worst < 1e-6);
            // Any split of the output rows gives bitwise the same result.
            a.y = y2.data();
            const size_t cut = out / 3;
            hs::matmul(a, cut, out);
            hs::matmul(a, 0, cut);
            CHECK(std::memcmp(y.data(), y2.data(), y.size() * 4) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("matmul_args_error names the bad argument") {
  hs::MatmulArgs a;
  float x[4] = {}, y[4] = {}, w[4] = {};
  a.x = x;
  a.w = w;
  a.y = y;
  a.t = 1;
  a.in = 4;
  a.out = 1;
  a.x_stride = 4;
  a.w_stride = 3;
  a.y_stride = 1;
  CHECK(std::string(hs::matmul_args_error(a)) == "w_stride is less than in");
  a.w_stride = 4;
  CHECK(hs::matmul_args_error(a) == nullptr);
  a.y = nullptr;
  CHECK(std::string(hs::matmul_args_error(a)) == "y is null");
}

}  // namespace
}  // namespace headway
