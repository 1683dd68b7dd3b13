// q8_0 / q4_0 row quantization: hand-computed blocks (scales that are powers of two, so every
// code is known exactly), short last blocks, round-trip bounds, NaN/Inf blocks, and every
// bad-input Status with nothing written. tests/torch/quantize_check.py compares the bytes with
// llama.cpp's own Python quantizers.
#include "headway/quantize.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"

namespace headway {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes quantize(QuantType type, const std::vector<float>& x) {
  Bytes out(quantized_row_bytes(type, x.size()), 0xab);
  const Status s = quantize_row(type, x.data(), x.size(), out.data(), out.size());
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out;
}

std::vector<float> dequantize(QuantType type, const Bytes& in, size_t n) {
  std::vector<float> y(n + 1, -7.0f);  // one sentinel past the row
  const Status s = dequantize_row(type, in.data(), in.size(), n, y.data());
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(y[n] == -7.0f);
  y.pop_back();
  return y;
}

uint16_t scale_bits(const Bytes& row, size_t block, size_t block_bytes) {
  return static_cast<uint16_t>(row[block * block_bytes] | (row[block * block_bytes + 1] << 8));
}

TEST_CASE("quantize: names and sizes") {
  CHECK(std::string(quant_type_name(QuantType::kQ8_0)) == "q8_0");
  CHECK(std::string(quant_type_name(QuantType::kQ4_0)) == "q4_0");
  CHECK(std::string(quant_type_name(static_cast<QuantType>(9))) == "unknown");
  CHECK(quant_block_bytes(QuantType::kQ8_0) == 34);
  CHECK(quant_block_bytes(QuantType::kQ4_0) == 18);
  CHECK(quant_block_bytes(static_cast<QuantType>(9)) == 0);
  const size_t lengths[] = {0, 1, 31, 32, 33, 50, 64, 80, 96, 128};
  const size_t blocks[] = {0, 1, 1, 1, 2, 2, 2, 3, 3, 4};
  for (size_t i = 0; i < std::size(lengths); ++i) {
    CHECK(quantized_row_bytes(QuantType::kQ8_0, lengths[i]) == 34 * blocks[i]);
    CHECK(quantized_row_bytes(QuantType::kQ4_0, lengths[i]) == 18 * blocks[i]);
  }
  CHECK(quantized_row_bytes(static_cast<QuantType>(9), 64) == 0);
  CHECK(quantized_row_bytes(QuantType::kQ8_0, std::numeric_limits<size_t>::max()) ==
        std::numeric_limits<size_t>::max());
}

TEST_CASE("quantize: q8_0 block with amax at the end rounds ties away from zero") {
  // amax 127 at the end: d = 1 exactly, id = 1, so q = roundf(x).
  std::vector<float> x(32, 0.0f);
  const float head[] = {0.5f, 1.5f, -0.5f, -2.5f, 2.4f, -2.6f, 126.5f, -126.5f, 0.49f, -0.0f};
  for (size_t i = 0; i < std::size(head); ++i) x[i] = head[i];
  x[31] = 127.0f;
  const int8_t want[] = {1, 2, -1, -3, 2, -3, 127, -127, 0, 0};
  const Bytes q = quantize(QuantType::kQ8_0, x);
  REQUIRE(q.size() == 34);
  CHECK(scale_bits(q, 0, 34) == 0x3c00);
  for (size_t i = 0; i < std::size(want); ++i) CHECK(static_cast<int8_t>(q[2 + i]) == want[i]);
  CHECK(static_cast<int8_t>(q[2 + 31]) == 127);
  const std::vector<float> y = dequantize(QuantType::kQ8_0, q, 32);
  for (size_t i = 0; i < std::size(want); ++i) CHECK(y[i] == static_cast<float>(want[i]));
  CHECK(y[31] == 127.0f);

  // amax 254 (negative): d = 2, id = 0.5: x = 1, 3, -5 scale to the ties 0.5, 1.5, -2.5.
  std::vector<float> z(32, 0.0f);
  z[0] = 1.0f, z[1] = 3.0f, z[2] = -5.0f, z[3] = 252.0f, z[20] = -254.0f;
  const Bytes qz = quantize(QuantType::kQ8_0, z);
  CHECK(scale_bits(qz, 0, 34) == f32_to_f16_bits(2.0f));
  const int8_t want_z[] = {1, 2, -3, 126};
  for (size_t i = 0; i < 4; ++i) CHECK(static_cast<int8_t>(qz[2 + i]) == want_z[i]);
  CHECK(static_cast<int8_t>(qz[2 + 20]) == -127);
}

TEST_CASE("quantize: q4_0 block codes, the -8·d extreme and the nibble layout") {
  // The first value of largest magnitude is -8: d = 1, id = 1, code = min(15, trunc(x + 8.5)).
  std::vector<float> x(32, 0.0f);
  const float head[] = {-8.0f, 7.0f, 8.0f, 0.4f, 0.5f, -0.6f, -1.5f, 3.2f};
  const uint8_t codes[] = {0, 15, 15, 8, 9, 7, 7, 11};
  for (size_t i = 0; i < std::size(head); ++i) x[i] = head[i];
  x[16] = -3.0f, x[17] = 6.6f, x[31] = 1.0f;  // high nibbles of bytes 0, 1 and 15
  const Bytes q = quantize(QuantType::kQ4_0, x);
  REQUIRE(q.size() == 18);
  CHECK(scale_bits(q, 0, 18) == 0x3c00);
  CHECK(q[2 + 0] == (0 | (5 << 4)));
  CHECK(q[2 + 1] == (15 | (15 << 4)));
  CHECK(q[2 + 15] == (8 | (9 << 4)));
  for (size_t i = 2; i < std::size(codes); ++i) CHECK((q[2 + i] & 0x0f) == codes[i]);
  const std::vector<float> y = dequantize(QuantType::kQ4_0, q, 32);
  CHECK(y[0] == -8.0f);  // the extreme: code 0, value (0 - 8) · d
  CHECK(y[1] == 7.0f);
  CHECK(y[2] == 7.0f);  // +8 clips to code 15: 8 is not larger in magnitude than the first -8
  CHECK(y[16] == -3.0f);
  CHECK(y[17] == 7.0f);

  // A positive extreme: m = 16, d = -2, id = -0.5; 16 gets code 0 and dequantizes to 16.
  std::vector<float> z(32, 1.0f);
  z[5] = 16.0f, z[6] = -16.0f;  // -16 comes later: m stays +16
  const Bytes qz = quantize(QuantType::kQ4_0, z);
  CHECK(scale_bits(qz, 0, 18) == f32_to_f16_bits(-2.0f));
  const std::vector<float> yz = dequantize(QuantType::kQ4_0, qz, 32);
  CHECK(yz[5] == 16.0f);
  CHECK(yz[6] == -14.0f);  // -16 · -0.5 + 8.5 = 16.5 → code 15 → (15 - 8) · -2
  CHECK(yz[0] == 0.0f);    // 1 · -0.5 + 8.5 = 8 → code 8
}

TEST_CASE("quantize: all zeros") {
  const std::vector<float> x(64, 0.0f);
  const Bytes q8 = quantize(QuantType::kQ8_0, x);
  const Bytes q4 = quantize(QuantType::kQ4_0, x);
  for (size_t b = 0; b < 2; ++b) {
    CHECK(scale_bits(q8, b, 34) == 0);
    CHECK(scale_bits(q4, b, 18) == 0x8000);  // d = 0 / -8 = -0, as in ggml
    for (size_t i = 0; i < 32; ++i) CHECK(q8[b * 34 + 2 + i] == 0);
    for (size_t j = 0; j < 16; ++j) CHECK(q4[b * 18 + 2 + j] == 0x88);
  }
  for (float v : dequantize(QuantType::kQ8_0, q8, 64)) CHECK(v == 0.0f);
  for (float v : dequantize(QuantType::kQ4_0, q4, 64)) CHECK(v == 0.0f);
}

// A short last block is the full block of the row padded with zeros: its bytes equal those of the
// padded row's last block, and its scale comes from the values present only.
TEST_CASE("quantize: a short last block of 16 and of 18 values") {
  for (const QuantType type : {QuantType::kQ8_0, QuantType::kQ4_0}) {
    for (const size_t tail : {size_t{16}, size_t{18}}) {
      CAPTURE(quant_type_name(type));
      CAPTURE(tail);
      std::vector<float> x(32 + tail);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f + 0.25f * i;
      x[32 + tail - 1] = -20.0f;  // the short block's extreme, larger than the first block's
      std::vector<float> padded = x;
      padded.resize(64, 0.0f);
      const Bytes q = quantize(type, x);
      CHECK(q == quantize(type, padded));
      const size_t block_bytes = quant_block_bytes(type);
      const float d = type == QuantType::kQ8_0 ? 20.0f / 127.0f : -20.0f / -8.0f;
      CHECK(scale_bits(q, 1, block_bytes) == f32_to_f16_bits(d));
      if (type == QuantType::kQ8_0) {
        for (size_t i = tail; i < 32; ++i) CHECK(q[34 + 2 + i] == 0);
      } else {
        for (size_t i = tail; i < 32; ++i) CHECK(((q[18 + 2 + i % 16] >> (i < 16 ? 0 : 4)) & 0x0f) == 8);
      }
      const std::vector<float> y = dequantize(type, q, x.size());
      const std::vector<float> y_padded = dequantize(type, q, 64);
      for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == y_padded[i]);
    }
  }
}

// |x - deq| per block: q8_0 within d/2, q4_0 within |d| (the +|m| side clips to code 15), each
// plus what rounding d to f16 adds (|q| ≤ 127 resp. 8 times |d − f16(d)|).
void check_round_trip(QuantType type, const std::vector<float>& x) {
  const Bytes q = quantize(type, x);
  const std::vector<float> y = dequantize(type, q, x.size());
  for (size_t start = 0, b = 0; start < x.size(); start += 32, ++b) {
    const size_t end = start + 32 < x.size() ? start + 32 : x.size();
    float amax = 0.0f;
    for (size_t i = start; i < end; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const double d = type == QuantType::kQ8_0 ? amax / 127.0 : amax / 8.0;
    const double d16 = std::fabs(f16_bits_to_f32(scale_bits(q, b, quant_block_bytes(type))));
    const double rounding = (type == QuantType::kQ8_0 ? 127.0 : 8.0) * std::fabs(d - d16) + 1e-6 * amax;
    const double bound = (type == QuantType::kQ8_0 ? 0.5 * d : d) + rounding;
    for (size_t i = start; i < end; ++i) {
      CAPTURE(i);
      CHECK(std::fabs(static_cast<double>(x[i]) - y[i]) <= bound);
    }
  }
}

TEST_CASE("quantize: round trip within half a step (q8_0) and a step (q4_0), lengths 1 to 96") {
  std::mt19937 rng(20);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const size_t n : {size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{64}, size_t{80}, size_t{96}}) {
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    x[n / 2] *= 30.0f;  // an outlier
    CAPTURE(n);
    check_round_trip(QuantType::kQ8_0, x);
    check_round_trip(QuantType::kQ4_0, x);
  }
}

TEST_CASE("quantize: a NaN or an infinity makes its block NaN and leaves the others") {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (const QuantType type : {QuantType::kQ8_0, QuantType::kQ4_0}) {
    for (const float v : bad) {
      CAPTURE(quant_type_name(type));
      CAPTURE(v);
      std::vector<float> x(80, 0.5f);
      x[40] = v;  // block 1
      const Bytes q = quantize(type, x);
      const Bytes clean = quantize(type, std::vector<float>(80, 0.5f));
      const size_t bb = quant_block_bytes(type);
      CHECK(scale_bits(q, 1, bb) == 0x7e00);
      CHECK(std::memcmp(q.data(), clean.data(), bb) == 0);
      CHECK(std::memcmp(q.data() + 2 * bb, clean.data() + 2 * bb, bb) == 0);
      const std::vector<float> y = dequantize(type, q, 80);
      for (size_t i = 0; i < 80; ++i) CHECK(std::isnan(y[i]) == (i >= 32 && i < 64));
    }
  }
}

TEST_CASE("quantize: scales at the ends of the f16 range") {
  // q8_0: max|x| 1e7 gives d = 78740, past f16's 65504: stored as inf, as ggml does.
  std::vector<float> x(32, 0.0f);
  x[3] = 1e7f;
  const Bytes q = quantize(QuantType::kQ8_0, x);
  CHECK(scale_bits(q, 0, 34) == 0x7c00);
  CHECK(dequantize(QuantType::kQ8_0, q, 32)[3] == std::numeric_limits<float>::infinity());
  // Subnormal extremes: 1/d overflows to inf, so x · id is ±inf or NaN (0 · inf); the codes stay
  // in range and the block (d rounds to f16 zero) dequantizes to zero.
  for (const QuantType type : {QuantType::kQ8_0, QuantType::kQ4_0}) {
    std::vector<float> tiny(32, 0.0f);
    tiny[0] = 1e-39f, tiny[1] = -1e-39f;
    const Bytes qt = quantize(type, tiny);
    CHECK((scale_bits(qt, 0, quant_block_bytes(type)) & 0x7fff) == 0);
    for (float v : dequantize(type, qt, 32)) CHECK(v == 0.0f);
  }
}

TEST_CASE("quantize: bad input returns a Status naming it and writes nothing") {
  const std::vector<float> x(40, 1.0f);
  const QuantType unknown = static_cast<QuantType>(7);
  Bytes out(200, 0x5a);
  const Bytes before = out;
  std::vector<float> y(40, 3.0f);
  const std::vector<float> y_before = y;
  struct Case {
    Status status;
    Code code;
    const char* message;
  };
  const Case cases[] = {
      {quantize_row(unknown, x.data(), 40, out.data(), out.size()), Code::kUnsupported,
       "quantize_row: quant type 7 is not one of q8_0, q4_0"},
      {quantize_row(QuantType::kQ8_0, nullptr, 40, out.data(), out.size()), Code::kInvalidArgument,
       "quantize_row: x is null with n = 40"},
      {quantize_row(QuantType::kQ4_0, x.data(), 40, nullptr, 100), Code::kInvalidArgument,
       "quantize_row: out is null with n = 40"},
      {quantize_row(QuantType::kQ8_0, x.data(), 40, out.data(), 67), Code::kInvalidArgument,
       "quantize_row: out_bytes 67 is below the 68 bytes of 40 q8_0 values"},
      {quantize_row(QuantType::kQ4_0, x.data(), 40, out.data(), 35), Code::kInvalidArgument,
       "quantize_row: out_bytes 35 is below the 36 bytes of 40 q4_0 values"},
      {dequantize_row(unknown, out.data(), out.size(), 40, y.data()), Code::kUnsupported,
       "dequantize_row: quant type 7 is not one of q8_0, q4_0"},
      {dequantize_row(QuantType::kQ8_0, nullptr, 100, 40, y.data()), Code::kInvalidArgument,
       "dequantize_row: in is null with n = 40"},
      {dequantize_row(QuantType::kQ4_0, out.data(), out.size(), 40, nullptr), Code::kInvalidArgument,
       "dequantize_row: y is null with n = 40"},
      {dequantize_row(QuantType::kQ8_0, out.data(), 67, 40, y.data()), Code::kInvalidArgument,
       "dequantize_row: in_bytes 67 is below the 68 bytes of 40 q8_0 values"},
      {dequantize_row(QuantType::kQ4_0, out.data(), 35, 40, y.data()), Code::kInvalidArgument,
       "dequantize_row: in_bytes 35 is below the 36 bytes of 40 q4_0 values"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    CHECK(c.status.code() == c.code);
    CHECK(std::string(c.status.message()) == c.message);
  }
  CHECK(std::memcmp(out.data(), before.data(), out.size()) == 0);
  CHECK(std::memcmp(y.data(), y_before.data(), y.size() * sizeof(float)) == 0);

  // n = 0 is an empty row: ok with null pointers, nothing written.
  CHECK(quantize_row(QuantType::kQ8_0, nullptr, 0, nullptr, 0).ok());
  CHECK(dequantize_row(QuantType::kQ4_0, nullptr, 0, 0, nullptr).ok());
  // Exactly the row's bytes is enough; the bytes past them are left alone.
  CHECK(quantize_row(QuantType::kQ4_0, x.data(), 40, out.data(), 36).ok());
  CHECK(std::memcmp(out.data() + 36, before.data() + 36, out.size() - 36) == 0);
}

TEST_CASE("convert_rows: each row as quantize_row and the scalar conversions give it, f32 and f16 sources") {
  std::mt19937 rng(21);
  std::normal_distribution<float> dist;
  for (size_t row_values : {size_t{1}, size_t{31}, size_t{32}, size_t{50}, size_t{80}, size_t{128}}) {
    const size_t rows = 5, n = rows * row_values;
    std::vector<float> x(n);
    for (float& v : x) v = dist(rng);
    std::vector<uint16_t> x16(n);
    f32_to_f16(x.data(), x16.data(), n);
    std::vector<float> x16_wide(n);
    f16_to_f32(x16.data(), x16_wide.data(), n);
    for (DType to : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      for (DType from : {DType::kF32, DType::kF16}) {
        INFO(row_values << " values, " << dtype_name(from) << " to " << dtype_name(to));
        const float* values = from == DType::kF32 ? x.data() : x16_wide.data();  // what the row holds
        const void* src = from == DType::kF32 ? static_cast<const void*>(x.data()) : x16.data();
        const size_t row_bytes = dtype_row_bytes(to, row_values);
        std::vector<uint8_t> got(rows * row_bytes, 0xAB), want(rows * row_bytes);
        REQUIRE(convert_rows(src, from, rows, row_values, to, got.data(), got.size()).ok());
        for (size_t r = 0; r < rows; ++r) {
          const float* row = values + r * row_values;
          uint8_t* w = want.data() + r * row_bytes;
          if (dtype_is_block(to)) {
            REQUIRE(quantize_row(quant_type_of(to), row, row_values, w, row_bytes).ok());
          } else if (to == DType::kF32) {
            std::memcpy(w, row, row_bytes);
          } else {
            for (size_t i = 0; i < row_values; ++i) {
              const uint16_t b = to == DType::kF16 ? f32_to_f16_bits(row[i]) : f32_to_bf16_bits(row[i]);
              std::memcpy(w + 2 * i, &b, 2);
            }
          }
        }
        CHECK(got == want);
      }
    }
  }
  // Bad input: the reason, and nothing written.
  const float x[4] = {1, 2, 3, 4};
  std::vector<uint8_t> out(64, 0x5A);
  const std::vector<uint8_t> before = out;
  CHECK(std::string(convert_rows(x, DType::kBF16, 1, 4, DType::kF32, out.data(), out.size()).message())
            .find("rows in bf16") != std::string::npos);
  CHECK(std::string(convert_rows(x, DType::kF32, 2, 32, DType::kQ8_0, out.data(), out.size()).message())
            .find("out_bytes 64 is below the 68 bytes") != std::string::npos);
  CHECK(convert_rows(nullptr, DType::kF32, 1, 4, DType::kF16, out.data(), out.size()).code() == Code::kInvalidArgument);
  CHECK(out == before);
}

}  // namespace
}  // namespace headway
