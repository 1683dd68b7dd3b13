// Weights in row groups (headway/detail/row_groups.hpp: q8_0, q4_*, q5_*, q4_K and q6_K rows
// interleaved 16 at a time, as a Model holds its borrowed matrices where matmul_reads_row_groups says so): the layout
// keeps every block's bytes, and the dense kernel over it, on every SIMD target this machine
// supports, gives what it gives over the file's layout where it decodes tiles (t > 1: bitwise),
// and a decode step (t = 1: the AVX-512 VNNI kernel of matmul_row_groups-inl.h, elsewhere the
// tiles) within x's rounding of x · Wᵀ in double (tests/kernels/block_rows.hpp's bound); where
// t > 1 runs in integers too (matmul_row_groups_gemm-inl.h), each token's row is its decode
// step's, bitwise. Rows of one group, several, and a tail past the last group; splits that cut
// groups, bitwise.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headway/detail/row_groups.hpp"
#include "headway/ggml_types.hpp"
#include "simd/matmul/matmul.h"
#include "tests/kernels/block_rows.hpp"
#include "tests/kernels/target_scope.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

namespace hs = simd;
using test::BlockFields;

constexpr BlockFields kGrouped[] = {{DType::kQ8_0, {0, -1}},  {DType::kQ4_0, {0, -1}}, {DType::kQ4_1, {0, 2}},
                                    {DType::kQ5_0, {0, -1}},  {DType::kQ5_1, {0, 2}},  {DType::kQ4_K, {0, 2}},
                                    {DType::kQ6_K, {208, -1}}};

std::vector<uint8_t> grouped(DType t, const std::vector<uint8_t>& w, size_t rows, size_t in) {
  std::vector<uint8_t> g(w.size(), 0xA5);
  row_groups::group(t, w.data(), g.data(), rows, in);
  return g;
}

TEST_CASE("row groups keep each block's bytes and give them back in ggml's order") {
  for (const BlockFields& f : kGrouped) {
    const DTypeTraits& type = dtype_traits(f.type);
    for (size_t rows : {size_t{1}, size_t{16}, size_t{37}, size_t{48}}) {
      for (size_t blocks : {size_t{1}, size_t{3}}) {
        INFO(type.name << " rows " << rows << " blocks " << blocks);
        const size_t in = blocks * type.block_values;
        test::Rng rng(rows * 7 + blocks);
        const std::vector<uint8_t> w = test::random_rows(f, rows, in, rng);
        const std::vector<uint8_t> g = grouped(f.type, w, rows, in);
        std::vector<uint8_t> sorted_w = w, sorted_g = g;  // the same bytes, moved
        std::sort(sorted_w.begin(), sorted_w.end());
        std::sort(sorted_g.begin(), sorted_g.end());
        CHECK(sorted_w == sorted_g);
        uint8_t block[row_groups::kMaxBlockBytes], blocks16[row_groups::kRows * row_groups::kMaxBlockBytes];
        for (size_t r = 0; r < rows; ++r) {
          for (size_t b = 0; b < blocks; ++b) {
            row_groups::block(f.type, g.data(), rows, in, r, b, block);
            CHECK(std::memcmp(block, &w[(r * blocks + b) * type.block_bytes], type.block_bytes) == 0);
          }
        }
        for (size_t grp = 0; grp < rows / row_groups::kRows; ++grp) {
          for (size_t b = 0; b < blocks; ++b) {
            row_groups::group_blocks(f.type, g.data(), blocks, grp, b, blocks16);
            for (size_t j = 0; j < row_groups::kRows; ++j) {
              const size_t r = grp * row_groups::kRows + j;
              CHECK(std::memcmp(blocks16 + j * type.block_bytes, &w[(r * blocks + b) * type.block_bytes],
                                type.block_bytes) == 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("matmul over weights in row groups matches the file's layout and the double reference on every target") {
#ifdef HEADWAY_TEST_EMULATED  // qemu-user: fewer shapes
  const size_t outs[] = {16, 37};
#else
  const size_t outs[] = {5, 16, 37, 64};
#endif
  for (const int64_t target : test::test_targets()) {
    test::TargetScope scope(target);
    INFO(test::target_label(target));
    for (const BlockFields& f : kGrouped) {
      const GgmlType ggml = static_cast<GgmlType>(dtype_traits(f.type).ggml);
      const bool super = dtype_traits(f.type).block_values == 256;  // the K-quants: 256 values a block
      for (size_t blocks : {size_t{1}, size_t{3}, super ? size_t{5} : size_t{41}}) {
        const size_t in = blocks * dtype_traits(f.type).block_values;
        for (size_t out : outs) {
          INFO(dtype_traits(f.type).name << " in " << in << " out " << out);
          test::Rng rng(in * 17 + out + dtype_traits(f.type).ggml);
          const std::vector<uint8_t> w = test::random_rows(f, out, in, rng);
          const std::vector<uint8_t> g = grouped(f.type, w, out, in);
          const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(f.type, in));
          std::vector<float> wd(out * in);
          for (size_t o = 0; o < out; ++o) {
            REQUIRE(dequantize_ggml_row(ggml, &w[o * row_bytes], row_bytes, in, &wd[o * in]).ok());
          }
          for (size_t t : {size_t{1}, size_t{3}, size_t{33}}) {
            for (const bool precise : {false, true}) {
              INFO("t " << t << " precise " << precise);
              std::vector<float> x(t * in);
              for (float& v : x) v = rng.normal();
              x[in / 2] = 4.0f;  // one large value: a coarse code step for its block
              hs::MatmulArgs a;
              a.x = x.data();
              a.x_stride = in;
              a.w = w.data();
              a.w_type = f.type;
              a.w_stride = in;
              a.y_stride = out + 1;
              a.t = t;
              a.in = in;
              a.out = out;
              a.precise_x = precise;
              std::vector<float> file(t * (out + 1), 7.0f), rows(file), split(file);
              a.y = file.data();
              hs::matmul(a, 0, out);
              a.w = g.data();
              a.w_row_groups = true;
              REQUIRE(hs::matmul_args_error(a) == nullptr);
              a.y = rows.data();
              hs::matmul(a, 0, out);
              // Cuts inside the first group, at its end, and inside the tail.
              a.y = split.data();
              size_t begin = 0;
              for (size_t end : {size_t{3}, size_t{16}, size_t{21}, out}) {
                end = std::min(end, out);
                if (end > begin) hs::matmul(a, begin, end);
                begin = std::max(begin, end);
              }
              CHECK(std::memcmp(rows.data(), split.data(), rows.size() * 4) == 0);
              for (size_t i = 0; i < t; ++i) CHECK(rows[i * (out + 1) + out] == 7.0f);  // padding untouched
              if (t > 1 && hs::matmul_x_code_max(a) == 0) {  // the tiles of the file's layout
                CHECK(std::memcmp(rows.data(), file.data(), rows.size() * 4) == 0);
                continue;
              }
              if (t > 1) {  // the integer GEMM: each token's row is its own decode step's, bitwise
                CHECK(hs::matmul_token_task(a) > 0);
                for (size_t i = 0; i < t; ++i) {
                  std::vector<float> step(out, 7.0f);
                  hs::MatmulArgs one = test::gemv_args(&x[i * in], g.data(), f.type, in, out, step.data());
                  one.precise_x = precise;
                  one.w_row_groups = true;
                  hs::matmul(one, 0, out);
                  CHECK(std::memcmp(step.data(), &rows[i * (out + 1)], out * 4) == 0);
                }
                continue;
              }
              CHECK(hs::matmul_token_task(a) == 0);
              const std::vector<float> x1(x.begin(), x.begin() + in);
              test::check_decode(x1, wd, in, out, rows.data(), hs::matmul_x_code_max(a), precise);
              // x prepared once for every row range gives bitwise the same rows, where a kernel
              // prepares it (the integer one: x quantized).
              std::vector<uint8_t> room(hs::kMatmulPreparedXBytes + 64);
              void* at = room.data() + (64 - reinterpret_cast<uintptr_t>(room.data()) % 64) % 64;
              const bool prepares = hs::kMatmulPreparedXBytes > 0 && hs::matmul_prepare_x(a, at);
              CHECK(prepares == (hs::matmul_x_code_max(a) != 0));
              if (!prepares) continue;
              std::vector<float> again(file.size(), 7.0f);
              a.y = again.data();
              a.x_prepared = at;
              hs::matmul(a, 0, 21 < out ? 21 : out);
              if (out > 21) hs::matmul(a, 21, out);
              CHECK(std::memcmp(rows.data(), again.data(), rows.size() * 4) == 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("a decode step over weights in row groups with x not finite gives rows that are not finite") {
  const size_t in = 512, out = 37;
  for (const int64_t target : test::test_targets()) {
    test::TargetScope scope(target);
    INFO(test::target_label(target));
    for (const BlockFields& f : kGrouped) {
      test::Rng rng(dtype_traits(f.type).ggml);
      const std::vector<uint8_t> g = grouped(f.type, test::random_rows(f, out, in, rng), out, in);
      for (const float bad : {std::nanf(""), INFINITY}) {
        for (const bool precise : {false, true}) {
          INFO(dtype_traits(f.type).name << " x = " << bad << " precise " << precise);
          std::vector<float> x(in), y(out, 7.0f);
          for (float& v : x) v = rng.normal();
          x[300] = bad;
          hs::MatmulArgs a = test::gemv_args(x.data(), g.data(), f.type, in, out, y.data());
          a.precise_x = precise;
          a.w_row_groups = true;
          hs::matmul(a, 0, out);
          for (size_t o = 0; o < out; ++o) CHECK_FALSE(std::isfinite(y[o]));
        }
      }
    }
  }
}

TEST_CASE("matmul_args_error refuses row groups of a type they do not hold or with a wider stride") {
  float x[256] = {}, y[1] = {};
  uint8_t w[256] = {};
  hs::MatmulArgs a;
  a.x = x;
  a.w = w;
  a.y = y;
  a.t = 1;
  a.in = 64;
  a.out = 1;
  a.x_stride = 64;
  a.w_stride = 64;
  a.y_stride = 1;
  a.w_row_groups = true;
  a.w_type = DType::kQ5_K;
  a.in = a.w_stride = 256;
  a.x_stride = 256;
  CHECK(std::string(hs::matmul_args_error(a)) == "w_row_groups with a w_type row groups do not hold");
  CHECK_FALSE(hs::matmul_reads_row_groups(DType::kQ5_K));
  CHECK_FALSE(hs::matmul_reads_row_groups(DType::kF32));
  a.w_type = DType::kQ4_0;
  a.in = a.x_stride = 64;
  a.w_stride = 96;
  CHECK(std::string(hs::matmul_args_error(a)) == "w_row_groups with w_stride other than in");
  a.w_stride = 64;
  CHECK(hs::matmul_args_error(a) == nullptr);
}

}  // namespace
}  // namespace headway
