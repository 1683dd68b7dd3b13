// The dense kernel over weights in ggml's block formats (simd/matmul/matmul_blocks-inl.h) on every SIMD
// target this machine supports, against x · Wᵀ in double with W dequantized by the loaders'
// bit-exact dequantize_ggml_row (itself checked against gguf-py in tests/torch): GEMV and GEMM,
// rows of one block to several tiles' chunks, row splits bitwise. A decode step (t = 1) may run in
// integers with x quantized per block of 32 as ggml does (matmul_int8-inl.h): there the bound adds
// x's rounding, half of each block's code step d_x = max|x| / 127 times Σ|w| over the block, and
// the result must also match x · Wᵀ with x quantized as matmul_x_code_max says (every target that
// quantizes x does it alike: AVX-512 VNNI, AVX-VNNI, SDOT, Helium).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"
#include "headway/ggml_types.hpp"
#include "simd/matmul/matmul.h"
#include "tests/kernels/block_rows.hpp"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

namespace hs = simd;

using test::BlockFields;
using test::random_rows;

constexpr BlockFields kFormats[] = {
    {DType::kQ8_0, {0, -1}},  {DType::kQ4_0, {0, -1}},   {DType::kQ4_1, {0, 2}}, {DType::kQ5_0, {0, -1}},
    {DType::kQ5_1, {0, 2}},   {DType::kQ4_K, {0, 2}},    {DType::kQ5_K, {0, 2}}, {DType::kQ6_K, {208, -1}},
    {DType::kQ2_K, {80, 82}}, {DType::kQ3_K, {108, -1}},
};

TEST_CASE("matmul over block-format weights matches the dequantized double reference on every target") {
#ifdef HEADWAY_TEST_EMULATED  // qemu-user: every shape of rows and blocks, fewer tokens and rows
  const size_t ts[] = {2, 5};
  const size_t outs[] = {1, 5};
#else
  const size_t ts[] = {2, 5, 33};  // t = 1: the decode step below
  const size_t outs[] = {1, 5, 37};
#endif
  for (const int64_t target : test::test_targets()) {
    test::TargetScope scope(target);
    INFO(test::target_label(target));
    for (const BlockFields& f : kFormats) {
      const DTypeTraits& type = dtype_traits(f.type);
      const GgmlType ggml = static_cast<GgmlType>(type.ggml);
      // Rows of one block, an odd number (a last pair of one block), and past one tile's chunk of
      // 1024 values.
      const bool small = type.block_values == 32;
      for (size_t blocks : {size_t{1}, size_t{3}, small ? size_t{41} : size_t{9}}) {
        const size_t in = blocks * type.block_values;
        for (size_t out : outs) {
          test::Rng rng(in * 131 + out + type.ggml);
          const std::vector<uint8_t> w = random_rows(f, out, in, rng);
          const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(f.type, in));
          std::vector<float> wd(out * in);
          for (size_t o = 0; o < out; ++o) {
            REQUIRE(dequantize_ggml_row(ggml, &w[o * row_bytes], row_bytes, in, &wd[o * in]).ok());
          }
          for (size_t t : ts) {
            INFO(std::string(type.name) << " t " << t << " in " << in << " out " << out);
            const size_t xs = in + 3, ys = out + 2;
            std::vector<float> x(t * xs);
            for (float& v : x) v = rng.normal();
            hs::MatmulArgs a;
            a.x = x.data();
            a.x_stride = xs;
            a.w = w.data();
            a.w_type = f.type;
            a.w_stride = in;
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
                  s += static_cast<double>(x[i * xs + k]) * wd[o * in + k];
                  mag += std::fabs(static_cast<double>(x[i * xs + k]) * wd[o * in + k]);
                }
                worst = std::max(worst, std::fabs(y[i * ys + o] - s) / (mag + 1e-30));
              }
              for (size_t o = out; o < ys; ++o) CHECK(y[i * ys + o] == 7.0f);  // padding untouched
            }
            CHECK(worst < 1e-5);
            // Any split of the output rows, and each token alone, give bitwise the same y.
            a.y = y2.data();
            const size_t cut = out / 3;
            hs::matmul(a, cut, out);
            hs::matmul(a, 0, cut);
            CHECK(std::memcmp(y.data(), y2.data(), y.size() * 4) == 0);
          }
          // A decode step: within x's rounding of the dequantized product (8-bit codes, or 16-bit
          // with precise_x); where the target runs it in integers, x · Wᵀ with x quantized as the
          // kernel says it quantizes it (every target that does so quantizes alike).
          for (const bool precise : {false, true}) {
            std::vector<float> x1(in), y1(out + 1, 7.0f);
            for (float& v : x1) v = rng.normal();
            x1[in / 2] = 4.0f;  // one large value: a coarse code step for its block
            hs::MatmulArgs a = test::gemv_args(x1.data(), w.data(), f.type, in, out, y1.data());
            a.precise_x = precise;
            a.y_stride = out + 1;
            hs::matmul(a, 0, out);
            INFO(std::string(type.name));
            test::check_decode(x1, wd, in, out, y1.data(), hs::matmul_x_code_max(a), precise);
            CHECK(y1[out] == 7.0f);
          }
        }
      }
    }
  }
}

// The AVX2 target's products without AVX-VNNI (VPMADDUBSW) saturate pairs at int16: at the codes'
// extremes (every weight code at its largest magnitude, x's codes all ±127 with the weights' sign
// or against it) the decode step must still match x · Wᵀ, and give the rows AVX-VNNI gives bit for
// bit where this CPU has it.
TEST_CASE("a decode step at the codes' extremes gives the same rows with AVX-VNNI's products and without") {
  for (const int64_t target : test::test_targets()) {
    test::TargetScope scope(target);
    INFO(test::target_label(target));
    for (const BlockFields& f : kFormats) {
      const DTypeTraits& type = dtype_traits(f.type);
      const GgmlType ggml = static_cast<GgmlType>(type.ggml);
      const size_t in = 2 * 256, out = 6;
      // 0x80: q8_0's −128 and q6_K's most negative scale; 0xff: every 4-, 5- and 6-bit code at its top.
      for (const uint8_t fill : {uint8_t{0x80}, uint8_t{0xff}}) {
        std::vector<uint8_t> w(out * in / type.block_values * type.block_bytes, fill);
        const uint16_t h = f32_to_f16_bits(0.01f);
        for (size_t b = 0; b < w.size() / type.block_bytes; ++b) {
          for (int at : f.f16_at) {
            if (at >= 0) std::memcpy(&w[b * type.block_bytes + static_cast<size_t>(at)], &h, 2);
          }
        }
        const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(f.type, in));
        std::vector<float> wd(out * in);
        for (size_t o = 0; o < out; ++o) {
          REQUIRE(dequantize_ggml_row(ggml, &w[o * row_bytes], row_bytes, in, &wd[o * in]).ok());
        }
        for (const float sign : {1.0f, -1.0f}) {
          std::vector<float> x(in, sign);
          for (size_t k = 0; k < in; k += 3) x[k] = -sign;  // both signs in each block
          for (const bool precise : {false, true}) {
            INFO(std::string(type.name) << " fill " << int{fill} << " sign " << sign << " precise " << precise);
            std::vector<float> y(out), y_plain(out);
            hs::MatmulArgs a = test::gemv_args(x.data(), w.data(), f.type, in, out, y.data());
            a.precise_x = precise;
            hs::matmul(a, 0, out);
            hs::matmul_allow_avx_vnni(false);
            a.y = y_plain.data();
            hs::matmul(a, 0, out);
            hs::matmul_allow_avx_vnni(true);
            CHECK(std::memcmp(y.data(), y_plain.data(), out * 4) == 0);
            test::check_decode(x, wd, in, out, y_plain.data(), hs::matmul_x_code_max(a), precise);
          }
        }
      }
    }
  }
}

TEST_CASE("a decode step over block-format weights with x not finite gives rows that are not finite") {
  // One NaN or infinity anywhere in a block of 32 (either half of a vector register's worth): in
  // f32 its products are not finite, and in integers its block's d_x is NaN.
  const size_t in = 512, out = 5;
  for (const int64_t target : test::test_targets()) {
    test::TargetScope scope(target);
    INFO(test::target_label(target));
    for (const BlockFields& f : kFormats) {
      test::Rng rng(dtype_traits(f.type).ggml);
      const std::vector<uint8_t> w = random_rows(f, out, in, rng);
      for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
        for (const size_t at : {size_t{0}, size_t{5}, size_t{20}, size_t{31}, size_t{300}}) {
          for (const bool precise : {false, true}) {
            INFO(std::string(dtype_traits(f.type).name) << " x[" << at << "] = " << bad << " precise " << precise);
            std::vector<float> x(in), y(out, 7.0f);
            for (float& v : x) v = rng.normal();
            x[at] = bad;
            hs::MatmulArgs a = test::gemv_args(x.data(), w.data(), f.type, in, out, y.data());
            a.precise_x = precise;
            hs::matmul(a, 0, out);
            for (size_t o = 0; o < out; ++o) CHECK_FALSE(std::isfinite(y[o]));
          }
        }
      }
    }
  }
}

TEST_CASE("matmul_args_error refuses block-format rows that are not whole blocks") {
  hs::MatmulArgs a;
  float x[64] = {}, y[1] = {};
  uint8_t w[40] = {};
  a.x = x;
  a.w = w;
  a.y = y;
  a.t = 1;
  a.in = 48;
  a.out = 1;
  a.x_stride = 64;
  a.w_stride = 64;
  a.y_stride = 1;
  a.w_type = DType::kQ4_1;
  CHECK(std::string(hs::matmul_args_error(a)) == "in or w_stride is not a whole number of w_type's blocks");
  a.in = 64;
  CHECK(hs::matmul_args_error(a) == nullptr);
  a.w_type = DType::kQ4_K;
  CHECK(std::string(hs::matmul_args_error(a)) == "in or w_stride is not a whole number of w_type's blocks");
}

}  // namespace
}  // namespace headway
