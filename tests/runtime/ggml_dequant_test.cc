// ggml's weight types: the table against ggml-common.h's sizes, and every dequantizer on blocks
// built here from codes and scales by packers written from ggml's reference quantizers (the
// writing side of each layout, independent of the reading side under test). Scales are small
// powers of two times small integers, so every expected value is exact in f32. Negative scales,
// negative mins, the extreme 6-bit scales (0 and 63) and every high bit are covered; bad rows
// are errors that write nothing. tests/torch/gguf_dequant_check.py compares with gguf-py.
#include "headway/ggml_types.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"

namespace headway {
namespace {

using Bytes = std::vector<uint8_t>;

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16_bits(v);
  REQUIRE(f16_bits_to_f32(h) == v);  // every scale here is exact in f16
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}

std::vector<float> dequantize(GgmlType type, const Bytes& b, size_t n) {
  std::vector<float> y(n + 1, -7.0f);  // one sentinel past the row
  const Status s = dequantize_ggml_row(type, b.data(), b.size(), n, y.data());
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(y[n] == -7.0f);
  y.pop_back();
  return y;
}

void check_equal(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("value " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]));
  }
}

// A scale d = k / 2^e with a small k and either sign: exact in f16, and its products with codes
// below 64 and 6-bit scales are exact in f32.
float random_scale(std::mt19937& rng, bool allow_negative) {
  const int k = static_cast<int>(rng() % 15) + 1;
  const float v = std::ldexp(static_cast<float>(k), -static_cast<int>(rng() % 8));
  return allow_negative && (rng() & 1) ? -v : v;
}

TEST_CASE("ggml types: the table holds ggml's ids, names and block sizes") {
  struct Want {
    uint32_t id;
    const char* name;
    uint32_t values, bytes;
  };
  // ggml.h's enum ggml_type and ggml-common.h's block structs (sizeof).
  const Want want[] = {{0, "f32", 1, 4},      {1, "f16", 1, 2},       {30, "bf16", 1, 2},     {2, "q4_0", 32, 18},
                       {3, "q4_1", 32, 20},   {6, "q5_0", 32, 22},    {7, "q5_1", 32, 24},    {8, "q8_0", 32, 34},
                       {10, "q2_K", 256, 84}, {11, "q3_K", 256, 110}, {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176},
                       {14, "q6_K", 256, 210}};
  CHECK(kGgmlTypeCount == std::size(want));
  for (const Want& w : want) {
    INFO(w.name);
    const GgmlTypeInfo* t = ggml_type_info(w.id);
    REQUIRE(t != nullptr);
    CHECK(static_cast<uint32_t>(t->type) == w.id);
    CHECK(std::string(t->name) == w.name);
    CHECK(t->block_values == w.values);
    CHECK(t->block_bytes == w.bytes);
    CHECK(std::string(kGgmlTypeNames).find(w.name) != std::string::npos);
  }
  for (uint32_t id : {4u, 5u, 9u, 15u, 16u, 29u, 31u, 99u, 0xffffffffu}) CHECK(ggml_type_info(id) == nullptr);
  static_assert(ggml_row_bytes(GgmlType::kQ4_K, 512) == 288);
  static_assert(ggml_row_bytes(GgmlType::kQ8_0, 64) == 68);
  static_assert(ggml_row_bytes(GgmlType::kF16, 3) == 6);
  static_assert(ggml_row_bytes(GgmlType::kQ4_0, 48) == 0);  // not whole blocks
  static_assert(ggml_row_bytes(static_cast<GgmlType>(4), 32) == 0);
}

TEST_CASE("ggml types: f32, f16 and bf16 rows widen exactly, at any alignment") {
  const uint32_t f32_bits[] = {0x3f800000u, 0xc0490fdbu, 0x7fc01234u, 0x00000001u, 0xff800000u};
  Bytes b(1 + sizeof(f32_bits));
  std::memcpy(b.data() + 1, f32_bits, sizeof(f32_bits));  // misaligned on purpose
  std::vector<float> y(5);
  REQUIRE(dequantize_ggml_row(GgmlType::kF32, b.data() + 1, b.size() - 1, 5, y.data()).ok());
  for (size_t i = 0; i < 5; ++i) CHECK(std::bit_cast<uint32_t>(y[i]) == f32_bits[i]);  // NaN payload kept

  const uint16_t h[] = {0x3c00, 0xc000, 0x0001, 0x7c00, 0x7e01};
  Bytes hb(reinterpret_cast<const uint8_t*>(h), reinterpret_cast<const uint8_t*>(h) + sizeof(h));
  const std::vector<float> hf = dequantize(GgmlType::kF16, hb, 5);
  const std::vector<float> bf = dequantize(GgmlType::kBF16, hb, 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(std::bit_cast<uint32_t>(hf[i]) == std::bit_cast<uint32_t>(f16_bits_to_f32(h[i])));
    CHECK(std::bit_cast<uint32_t>(bf[i]) == uint32_t{h[i]} << 16);
  }
}

TEST_CASE("ggml types: q4_0, q4_1, q5_0, q5_1 and q8_0 blocks by hand") {
  SUBCASE("q4_0: (q - 8) * d, low nibbles first, a negative scale") {
    Bytes b(18);
    put_f16(b.data(), -0.5f);
    for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    std::vector<float> want(32);
    for (int j = 0; j < 16; ++j) {
      want[j] = static_cast<float>(j - 8) * -0.5f;
      want[j + 16] = static_cast<float>(7 - j) * -0.5f;
    }
    check_equal(dequantize(GgmlType::kQ4_0, b, 32), want);
    CHECK(dequantize(GgmlType::kQ4_0, b, 32)[0] == 4.0f);
  }
  SUBCASE("q4_1: q * d + m with a negative min") {
    Bytes b(20);
    put_f16(b.data(), 0.25f);
    put_f16(b.data() + 2, -3.0f);
    for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>((15 - j) | j << 4);
    const std::vector<float> y = dequantize(GgmlType::kQ4_1, b, 32);
    CHECK(y[0] == 15 * 0.25f - 3.0f);
    CHECK(y[15] == -3.0f);
    CHECK(y[16] == -3.0f);
    CHECK(y[31] == 15 * 0.25f - 3.0f);
  }
  SUBCASE("q5_0 and q5_1: the fifth bit of value j is bit j of qh") {
    for (const bool with_min : {false, true}) {
      INFO(std::string(with_min ? "q5_1" : "q5_0"));
      Bytes b(with_min ? 24 : 22);
      put_f16(b.data(), 2.0f);
      if (with_min) put_f16(b.data() + 2, -40.0f);
      const uint32_t qh = 0x8000'0001u | 1u << 16 | 1u << 5;  // values 0, 5, 16 and 31
      for (int i = 0; i < 4; ++i) b[(with_min ? 4 : 2) + i] = static_cast<uint8_t>(qh >> (8 * i));
      uint8_t* qs = b.data() + (with_min ? 8 : 6);
      for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(3 | 12 << 4);
      const std::vector<float> y = dequantize(with_min ? GgmlType::kQ5_1 : GgmlType::kQ5_0, b, 32);
      for (int j = 0; j < 32; ++j) {
        const int q = (j < 16 ? 3 : 12) + (((qh >> j) & 1) ? 16 : 0);
        const float want = with_min ? static_cast<float>(q) * 2.0f - 40.0f : static_cast<float>(q - 16) * 2.0f;
        CHECK(y[static_cast<size_t>(j)] == want);
      }
    }
  }
  SUBCASE("q8_0: int8 codes from -128 to 127 times d") {
    Bytes b(34);
    put_f16(b.data(), -0.125f);
    const int8_t codes[4] = {-128, -1, 0, 127};
    for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(codes[j % 4]);
    const std::vector<float> y = dequantize(GgmlType::kQ8_0, b, 32);
    CHECK(y[0] == 16.0f);
    CHECK(y[1] == 0.125f);
    CHECK(y[2] == 0.0f);
    CHECK(std::signbit(y[2]));  // 0 · -0.125 is -0, as in ggml
    CHECK(y[3] == -15.875f);
  }
}

// ---------------------------------------------------------------- K-quants: packers from ggml's quantizers

// Codes (unsigned, as stored) and per-sub-block scales/mins of one super-block of 256.
struct KBlock {
  float d = 0, dmin = 0;
  int sc[16] = {};
  int mn[16] = {};
  int q[256] = {};
};

Bytes pack_q2_k(const KBlock& k) {
  Bytes b(84, 0);
  for (int s = 0; s < 16; ++s) b[s] = static_cast<uint8_t>(k.sc[s] | k.mn[s] << 4);
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; ++l) {
      b[16 + j / 4 + l] =
          static_cast<uint8_t>(k.q[j + l] | k.q[j + l + 32] << 2 | k.q[j + l + 64] << 4 | k.q[j + l + 96] << 6);
    }
  }
  put_f16(b.data() + 80, k.d);
  put_f16(b.data() + 82, k.dmin);
  return b;
}

// q3_K: q holds 0..7 (the stored 2 bits plus the high bit times 4), sc the 6-bit stored scale.
Bytes pack_q3_k(const KBlock& k) {
  Bytes b(110, 0);
  uint8_t* hmask = b.data();
  uint8_t* qs = b.data() + 32;
  uint8_t* scales = b.data() + 96;
  for (int j = 0; j < 16; ++j) {
    const int l = k.sc[j];
    if (j < 8) scales[j] = static_cast<uint8_t>(l & 0xf);
    else scales[j - 8] |= static_cast<uint8_t>((l & 0xf) << 4);
    scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
  }
  int low[256];
  for (int v = 0; v < 256; ++v) {
    low[v] = k.q[v] & 3;
    if (k.q[v] > 3) hmask[v % 32] |= static_cast<uint8_t>(1 << (v / 32));
  }
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] =
          static_cast<uint8_t>(low[j + l] | low[j + l + 32] << 2 | low[j + l + 64] << 4 | low[j + l + 96] << 6);
    }
  }
  put_f16(b.data() + 108, k.d);
  return b;
}

void pack_k4_scales(const KBlock& k, uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    const int ls = k.sc[j], lm = k.mn[j];
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls);
      scales[j + 4] = static_cast<uint8_t>(lm);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls & 0xf) | (lm & 0xf) << 4);
      scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
}

Bytes pack_q4_k(const KBlock& k) {
  Bytes b(144, 0);
  put_f16(b.data(), k.d);
  put_f16(b.data() + 2, k.dmin);
  pack_k4_scales(k, b.data() + 4);
  uint8_t* q = b.data() + 16;
  for (int j = 0; j < 256; j += 64, q += 32) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(k.q[j + l] | k.q[j + l + 32] << 4);
  }
  return b;
}

Bytes pack_q5_k(const KBlock& k) {
  Bytes b(176, 0);
  put_f16(b.data(), k.d);
  put_f16(b.data() + 2, k.dmin);
  pack_k4_scales(k, b.data() + 4);
  uint8_t* qh = b.data() + 16;
  uint8_t* ql = b.data() + 48;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < 256; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = k.q[n + j], l2 = k.q[n + j + 32];
      if (l1 > 15) l1 -= 16, qh[j] |= m1;
      if (l2 > 15) l2 -= 16, qh[j] |= m2;
      ql[j] = static_cast<uint8_t>(l1 | l2 << 4);
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
  return b;
}

// q6_K: q holds 0..63 (stored; the value is q - 32), sc the int8 scale.
Bytes pack_q6_k(const KBlock& k) {
  Bytes b(210, 0);
  uint8_t* ql = b.data();
  uint8_t* qh = b.data() + 128;
  for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const int* L = k.q + j + l;
      ql[l] = static_cast<uint8_t>((L[0] & 0xf) | (L[64] & 0xf) << 4);
      ql[l + 32] = static_cast<uint8_t>((L[32] & 0xf) | (L[96] & 0xf) << 4);
      qh[l] = static_cast<uint8_t>(L[0] >> 4 | (L[32] >> 4) << 2 | (L[64] >> 4) << 4 | (L[96] >> 4) << 6);
    }
  }
  for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(k.sc[s]));
  put_f16(b.data() + 208, k.d);
  return b;
}

// The values ggml's formulas give, value v in sub-block v / (256 / subs).
std::vector<float> expected(GgmlType type, const KBlock& k) {
  std::vector<float> y(256);
  for (int v = 0; v < 256; ++v) {
    const int s16 = v / 16, s32 = v / 32;
    switch (type) {
      case GgmlType::kQ2_K: y[v] = k.d * k.sc[s16] * k.q[v] - k.dmin * k.mn[s16]; break;
      case GgmlType::kQ3_K: y[v] = k.d * (k.sc[s16] - 32) * (k.q[v] - 4); break;
      case GgmlType::kQ4_K:
      case GgmlType::kQ5_K: y[v] = k.d * k.sc[s32] * k.q[v] - k.dmin * k.mn[s32]; break;
      case GgmlType::kQ6_K: y[v] = k.d * k.sc[s16] * (k.q[v] - 32); break;
      default: FAIL("not a K-quant");
    }
  }
  return y;
}

KBlock random_kblock(GgmlType type, std::mt19937& rng) {
  KBlock k;
  k.d = random_scale(rng, true);  // negative super-block scales too
  k.dmin = random_scale(rng, true);
  const int q_max = type == GgmlType::kQ2_K   ? 3
                    : type == GgmlType::kQ3_K ? 7
                    : type == GgmlType::kQ4_K ? 15
                    : type == GgmlType::kQ5_K ? 31
                                              : 63;
  for (int& q : k.q) q = static_cast<int>(rng() % static_cast<unsigned>(q_max + 1));
  for (int s = 0; s < 16; ++s) {
    switch (type) {
      case GgmlType::kQ2_K: k.sc[s] = static_cast<int>(rng() % 16), k.mn[s] = static_cast<int>(rng() % 16); break;
      case GgmlType::kQ6_K: k.sc[s] = static_cast<int>(rng() % 256) - 128; break;
      default: k.sc[s] = static_cast<int>(rng() % 64), k.mn[s] = static_cast<int>(rng() % 64); break;
    }
  }
  // The extremes of every scale field.
  if (type == GgmlType::kQ6_K) {
    k.sc[0] = -128, k.sc[15] = 127;
  } else if (type == GgmlType::kQ2_K) {
    k.sc[0] = 15, k.mn[0] = 15, k.sc[1] = 0, k.mn[1] = 0;
  } else {
    k.sc[0] = 63, k.mn[0] = 63, k.sc[7] = 0, k.mn[7] = 63, k.sc[5] = 63, k.mn[5] = 0;
  }
  return k;
}

TEST_CASE("ggml types: q2_K, q3_K, q4_K, q5_K and q6_K super-blocks from their packers") {
  std::mt19937 rng(20261205);
  struct Case {
    GgmlType type;
    Bytes (*pack)(const KBlock&);
  };
  for (const Case& c :
       {Case{GgmlType::kQ2_K, pack_q2_k}, Case{GgmlType::kQ3_K, pack_q3_k}, Case{GgmlType::kQ4_K, pack_q4_k},
        Case{GgmlType::kQ5_K, pack_q5_k}, Case{GgmlType::kQ6_K, pack_q6_k}}) {
    INFO(ggml_type_info(c.type)->name);
    for (int trial = 0; trial < 20; ++trial) {
      INFO("trial " << trial);
      // A row of two super-blocks: the second must not read the first's scales.
      const KBlock a = random_kblock(c.type, rng), b = random_kblock(c.type, rng);
      Bytes row = c.pack(a);
      const Bytes second = c.pack(b);
      row.insert(row.end(), second.begin(), second.end());
      std::vector<float> want = expected(c.type, a);
      const std::vector<float> want_b = expected(c.type, b);
      want.insert(want.end(), want_b.begin(), want_b.end());
      check_equal(dequantize(c.type, row, 512), want);
    }
  }
}

TEST_CASE("ggml types: q3_K's scale packing and high bits, one sub-block at a time") {
  // Scale 6-bit value s + 1 for sub-block s: every sub-block's scale lands in its own field.
  KBlock k;
  k.d = 1.0f;
  for (int s = 0; s < 16; ++s) k.sc[s] = s == 0 ? 0 : s == 15 ? 63 : s * 4 + 1;
  for (int v = 0; v < 256; ++v) k.q[v] = 4 + (v & 3);  // high bit set: q - 4 in 0..3
  k.q[37] = 0;                                         // high bit clear: q - 4 = -4
  const std::vector<float> y = dequantize(GgmlType::kQ3_K, pack_q3_k(k), 256);
  CHECK(y[0] == 0.0f * -32.0f);  // sub-block 0: scale 0 - 32 = -32 times code 0
  CHECK(y[1] == -32.0f);
  CHECK(y[37] == static_cast<float>((2 * 4 + 1 - 32) * -4));
  CHECK(y[255] == static_cast<float>(31 * 3));  // sub-block 15: 63 - 32
  check_equal(y, expected(GgmlType::kQ3_K, k));
}

TEST_CASE("ggml types: bad rows are errors that name the type and the numbers, and write nothing") {
  Bytes b(1024, 0x11);
  std::vector<float> y(600, -7.0f);
  auto check_error = [&](GgmlType t, size_t bytes, size_t n, Code code, const char* needle) {
    const Status s = dequantize_ggml_row(t, b.data(), bytes, n, y.data());
    INFO(s.message());
    CHECK_FALSE(s.ok());
    CHECK(s.code() == code);
    CHECK(std::string(s.message()).find(needle) != std::string::npos);
    for (float v : y) REQUIRE(v == -7.0f);
  };
  check_error(GgmlType::kQ4_K, 1024, 100, Code::kInvalidArgument,
              "a q4_K row of 100 values is not a whole number of 256-value blocks");
  check_error(GgmlType::kQ8_0, 1024, 33, Code::kInvalidArgument, "q8_0 row of 33 values");
  check_error(GgmlType::kQ6_K, 419, 512, Code::kOutOfRange,
              "a q6_K row of 512 values needs 420 bytes (2 blocks of 210), got 419");
  check_error(GgmlType::kF32, 7, 2, Code::kOutOfRange, "needs 8 bytes");
  check_error(static_cast<GgmlType>(4), 1024, 32, Code::kUnsupported, "ggml type 4 is not one headway dequantizes");
  check_error(static_cast<GgmlType>(20), 1024, 32, Code::kUnsupported, "q4_0, q4_1");
  CHECK_FALSE(dequantize_ggml_row(GgmlType::kQ4_0, nullptr, 18, 32, y.data()).ok());
  CHECK_FALSE(dequantize_ggml_row(GgmlType::kQ4_0, b.data(), 18, 32, nullptr).ok());
  CHECK(dequantize_ggml_row(GgmlType::kQ4_0, nullptr, 0, 0, nullptr).ok());  // an empty row
}

}  // namespace
}  // namespace headway
