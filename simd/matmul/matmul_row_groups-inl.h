// x in 16-bit codes for weights in row groups (headway/detail/row_groups.hpp: 16 rows interleaved
// four bytes at a time), and the decode GEMV (one token) over q8_0, q4_0, q4_1, q5_0 and q5_1 ones,
// on x86 with AVX-512 VNNI (Highway's AVX3_DL target). Included by matmul_int8-inl.h, whose x
// scaling (ScaleBlock), VPDPBUSD and block formats it shares; matmul_row_groups_gemm-inl.h runs it
// over a call's rows and tokens.
//
// x is quantized to 16-bit codes per block of 32 (d_x = max|x| / kRowGroupsCodeMax): its rounding
// is 257 times finer than the 8-bit codes of ggml's activations, so a decode step gives what the
// f32 tiles give to about 1e-5, and greedy decoding follows the reference where an 8-bit step
// may flip a choice between close logits. Each code is two signed bytes, c = 256 h + l with
// l in [−128, 127] (h = (c + 128) >> 8: in [−127, 127] for |c| ≤ 127 · 257), and the weights are
// unsigned bytes u (q8_0's q + 128, q4's nibble, q5's nibble with its fifth bit), so VPDPBUSD
// (unsigned × signed, four products to an int32 lane) meets u with h and with l: Σ u c =
// 256 Σ u h + Σ u l, exact in int32 (|Σ u c| ≤ 32 · 255 · 32639 < 2³¹).
//
// Each 32-bit lane is one row: a 64-byte chunk of a group holds four weight bytes of each of its
// 16 rows, and VPDPBUSD meets them with the four x bytes they multiply, broadcast to every lane.
// Per block, one conversion and its scales for 16 rows at once (one f16 conversion of 16 d, and
// of 16 m for the types with a min), from the block's start −offset · Σ c:
//   q8_0  y += d_w · d_x · Σ (u − 128) c    (offset 128)
//   q4_0  y += d_w · d_x · Σ (u − 8) c      (offset 8), q5_0 likewise (offset 16)
//   q4_1  y += d_w · d_x · Σ u c,  y' += m_w · d_x · Σ c,  y + y' at the end; q5_1 likewise
// q5's fifth bits come from qh, 16 rows of it in one vector (FifthBits).
// Rows past the last whole group keep the file's layout and run the same arithmetic one row at a
// time (PanelTailRow, TailBlock: the same sums, exact, and the same float steps in the same order,
// so a row's y never depends on where it lies or how the rows are split).

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "headway/detail/row_groups.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

inline constexpr int kRowGroupsCodeMax = 127 * 257;  // 32639: h = (c + 128) >> 8 stays a signed byte

#if HWY_TARGET == HWY_AVX3_DL

inline constexpr size_t kGroupRows = row_groups::kRows;
// A group's codes stream from memory in one run: each block asks for the lines this far ahead
// (docs/PERFORMANCE.md has the measurement that chose it).
inline constexpr size_t kPrefetchBytes = 8192;

// Whether this call runs here: W in row groups, a decode step (GEMV) or a prefill (GEMM,
// matmul_row_groups_gemm-inl.h).
inline bool RowGroupsRun(const MatmulArgs& a) {
  return a.w_row_groups && a.in <= kMaxQuantizedIn && row_groups::holds(a.w_type);
}

// Whether W's scales cover 16 values (q6_K): x's blocks of 32 then start each half apart.
template <WeightType kW>
inline constexpr bool kHalfScales = kW == WeightType::kQ6_K;

// One block of 32 values of x quantized: its 16-bit codes' bytes l and h (int8 bits) for values
// 0 .. 15 and 16 .. 31, d_x, the block's start −offset · Σ c (an int32; with kHalfScales, each
// half's, of its own 16 codes) and d_x · Σ c (the min term).
struct BlockCodes {
  __m128i low[2], high[2];
  float dx;
  int32_t start[2];
  float sx;
};

template <WeightType kW>
HWY_INLINE BlockCodes QuantizeBlock(const float* HWY_RESTRICT x) {
  const __m512i half = _mm512_set1_epi32(128);
  const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
  __m512 id;
  BlockCodes q;
  q.dx = ScaleBlock<kRowGroupsCodeMax>(v0, v1, &id);
  const __m512i c0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id)), c1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
  const __m512i h0 = _mm512_srai_epi32(_mm512_add_epi32(c0, half), 8);
  const __m512i h1 = _mm512_srai_epi32(_mm512_add_epi32(c1, half), 8);
  q.high[0] = _mm512_cvtepi32_epi8(h0);
  q.high[1] = _mm512_cvtepi32_epi8(h1);
  q.low[0] = _mm512_cvtepi32_epi8(_mm512_sub_epi32(c0, _mm512_slli_epi32(h0, 8)));
  q.low[1] = _mm512_cvtepi32_epi8(_mm512_sub_epi32(c1, _mm512_slli_epi32(h1, 8)));
  // In 64 bits, then wrapped as the vector sums wrap: a block with a value that is not finite has
  // codes of INT_MIN (its d_x is NaN, and so are its products whatever the sums hold).
  const int64_t offset = kPair<kW>.offset;
  if constexpr (kHalfScales<kW>) {
    const int32_t sum0 = _mm512_reduce_add_epi32(c0), sum1 = _mm512_reduce_add_epi32(c1);
    q.start[0] = static_cast<int32_t>(-offset * sum0);
    q.start[1] = static_cast<int32_t>(-offset * sum1);
    q.sx = 0.0f;
  } else {
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
    q.start[0] = static_cast<int32_t>(-offset * sum);
    q.start[1] = 0;
    q.sx = q.dx * static_cast<float>(sum);
  }
  return q;
}

// x of n tokens as the kernels read it (a decode step's: n = 1): codes [nb][8 chunks][n][8 bytes:
// l of the chunk's four values, then h] (a tile's codes for one chunk lie side by side, at offsets
// fixed by the token), then d_x and min terms [nb][n], starts [nb][n][2].
struct Panel {
  uint8_t* codes;
  float* dx;
  float* sx;
  int32_t* start;
  size_t n;

  Panel(void* room, size_t in, size_t tokens) : n(tokens) {
    const size_t nb = in / 32;
    codes = static_cast<uint8_t*>(room);
    dx = reinterpret_cast<float*>(codes + 2 * n * in);
    sx = dx + n * nb;
    start = reinterpret_cast<int32_t*>(sx + n * nb);
  }
  static constexpr size_t bytes(size_t in, size_t tokens) { return tokens * (2 * in + 16 * (in / 32)); }
  uint8_t* chunk(size_t b, size_t c, size_t j) const { return codes + ((b * 8 + c) * n + j) * 8; }
  size_t at(size_t b, size_t j) const { return b * n + j; }
};

static_assert(Panel::bytes(kMaxQuantizedIn, 1) <= kMatmulPreparedXBytes,
              "matmul_prepare_x's room holds a panel of one token");

template <WeightType kW>
HWY_INLINE void QuantizePanel(const float* HWY_RESTRICT x, size_t x_stride, size_t in, const Panel& p) {
  for (size_t j = 0; j < p.n; ++j) {
    for (size_t b = 0; b < in / 32; ++b) {
      const BlockCodes c = QuantizeBlock<kW>(x + j * x_stride + b * 32);
      for (size_t h = 0; h < 2; ++h) {  // chunks 4h .. 4h + 3: l and h of each, 8 bytes
        const __m128i lo = _mm_unpacklo_epi32(c.low[h], c.high[h]), hi = _mm_unpackhi_epi32(c.low[h], c.high[h]);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(p.chunk(b, 4 * h, j)), lo);
        _mm_storeh_pd(reinterpret_cast<double*>(p.chunk(b, 4 * h + 1, j)), _mm_castsi128_pd(lo));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(p.chunk(b, 4 * h + 2, j)), hi);
        _mm_storeh_pd(reinterpret_cast<double*>(p.chunk(b, 4 * h + 3, j)), _mm_castsi128_pd(hi));
      }
      p.dx[p.at(b, j)] = c.dx;
      p.sx[p.at(b, j)] = c.sx;
      p.start[2 * p.at(b, j)] = c.start[0];
      p.start[2 * p.at(b, j) + 1] = c.start[1];
    }
  }
}

// Whether W is one of the K-quants (super-blocks of 256: matmul_row_groups_k-inl.h).
template <WeightType kW>
inline constexpr bool kSuperBlocks = kW == WeightType::kQ4_K || kW == WeightType::kQ6_K;

// f(std::integral_constant<WeightType, w>) for a type row groups hold (q4_1 for any other).
template <class F>
HWY_INLINE void WithRowGroupsType(WeightType w, const F& f) {
  switch (w) {
    case WeightType::kQ8_0: return f(std::integral_constant<WeightType, WeightType::kQ8_0>());
    case WeightType::kQ4_0: return f(std::integral_constant<WeightType, WeightType::kQ4_0>());
    case WeightType::kQ5_0: return f(std::integral_constant<WeightType, WeightType::kQ5_0>());
    case WeightType::kQ5_1: return f(std::integral_constant<WeightType, WeightType::kQ5_1>());
    case WeightType::kQ4_K: return f(std::integral_constant<WeightType, WeightType::kQ4_K>());
    case WeightType::kQ6_K: return f(std::integral_constant<WeightType, WeightType::kQ6_K>());
    default: return f(std::integral_constant<WeightType, WeightType::kQ4_1>());
  }
}

// x's codes for a decode step over a's type into out (matmul_prepare_x): a panel of one token.
HWY_INLINE bool PrepareRowGroupsX(const MatmulArgs& a, void* out) {
  WithRowGroupsType(a.w_type,
                    [&](auto w) { QuantizePanel<decltype(w)::value>(a.x, a.x_stride, a.in, Panel(out, a.in, 1)); });
  return true;
}

// Bits first .. first + 3 of each lane's qh (the fifth bits of the four values a chunk's lane
// holds) as a mask of the chunk's bytes: byte 4r + i of the vector is row r's value first + i, and
// VPSHUFBITQMB picks for it bit (r % 2) · 32 + first + i of the 64-bit lane that holds rows r and
// r + 1's qh.
HWY_INLINE __mmask64 FifthBits(__m512i qh, unsigned first) {
  alignas(64) static constexpr uint8_t kPick[64] = {
      0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35,
      0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35, 0, 1, 2, 3, 32, 33, 34, 35};
  const __m512i pick = _mm512_add_epi8(_mm512_load_si512(kPick), _mm512_set1_epi8(static_cast<char>(first)));
  return _mm512_bitshuffle_epi64_mask(qh, pick);
}

// Chunk k (of 4) of a q4 / q5 block's 16 rows as unsigned bytes: its low nibbles are values
// 4k .. 4k + 3 (lo), its high ones 16 + 4k .. 16 + 4k + 3 (hi), with q5's fifth bits from qh.
template <WeightType kW>
HWY_INLINE void NibbleChunk(const uint8_t* codes, size_t k, __m512i qh, __m512i* lo, __m512i* hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i w = _mm512_loadu_si512(codes + k * 64);
  *lo = _mm512_and_si512(w, low4);
  *hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
  if constexpr (kPair<kW>.high != 0) {
    const __m512i fifth = _mm512_set1_epi8(0x10);
    *lo = _mm512_mask_add_epi8(*lo, FifthBits(qh, static_cast<unsigned>(4 * k)), *lo, fifth);
    *hi = _mm512_mask_add_epi8(*hi, FifthBits(qh, static_cast<unsigned>(16 + 4 * k)), *hi, fifth);
  }
}

// acc plus a block of 16 rows (heads at head) against one token's x (d_x dx, min term sx), from the
// sums of its codes' low and high bytes: d_w · d_x · (256 high + low), then m_w · d_x · Σ c for the
// types with a min. The GEMV, the GEMM and the tail rows (TailBlock) take these float steps in
// this order.
template <WeightType kW>
HWY_INLINE __m512 AddBlock(__m512 acc, __m512i low, __m512i high, const uint8_t* head, float dx, float sx) {
  const __m512i sum = _mm512_add_epi32(_mm512_slli_epi32(high, 8), low);
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(head)));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc);
  if constexpr (kPair<kW>.min) {
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(head + 32)));
    acc = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx), acc);
  }
  return acc;
}

// y[0..16) of the group at `group` (nb blocks per row) against token j of the panel: a decode step,
// and the GEMM's tile of one token.
template <WeightType kW>
HWY_INLINE void GemvGroup(const uint8_t* HWY_RESTRICT group, size_t nb, const Panel& p, size_t j, float* y) {
  constexpr size_t kH = row_groups::head_bytes(kW), kC = kPair<kW>.block_bytes - kH;
  const uint8_t* heads = group + kGroupRows * nb * kC;
  const __m512i flip = _mm512_set1_epi8(-128);
  const size_t step = p.n * 8;  // from one chunk of x's codes to the next
  __m512 acc = _mm512_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* codes = group + b * kGroupRows * kC;
    for (size_t line = 0; line < kC / 4; ++line) {  // the block's 16 · kC bytes of codes, 64 a line
      _mm_prefetch(reinterpret_cast<const char*>(codes + line * 64 + kPrefetchBytes), _MM_HINT_T0);
    }
    const uint8_t* head = heads + b * kGroupRows * kH;  // 16 d, 16 m, 16 qh (row_groups.hpp)
    const uint8_t* x = p.chunk(b, 0, j);                // chunk c at x + c · step: l, then h
    const size_t at = p.at(b, j);
    __m512i low = _mm512_set1_epi32(p.start[2 * at]), high = _mm512_setzero_si512();
    if constexpr (kW == WeightType::kQ8_0) {
      for (size_t k = 0; k < 8; ++k) {
        const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(codes + k * 64), flip);
        low = DotU8S8Broadcast(low, u, x + k * step);
        high = DotU8S8Broadcast(high, u, x + k * step + 4);
      }
    } else {  // two chains for each byte of x (one token: the latency of VPDPBUSD would bound it)
      __m512i low1 = _mm512_setzero_si512(), high1 = _mm512_setzero_si512();
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kPair<kW>.high != 0) qh = _mm512_loadu_si512(head + row_groups::scale_bytes(kW) * kGroupRows);
      for (size_t k = 0; k < 4; ++k) {
        __m512i lo, hi;
        NibbleChunk<kW>(codes, k, qh, &lo, &hi);
        low = DotU8S8Broadcast(low, lo, x + k * step);
        high = DotU8S8Broadcast(high, lo, x + k * step + 4);
        low1 = DotU8S8Broadcast(low1, hi, x + (4 + k) * step);
        high1 = DotU8S8Broadcast(high1, hi, x + (4 + k) * step + 4);
      }
      low = _mm512_add_epi32(low, low1);
      high = _mm512_add_epi32(high, high1);
    }
    acc = AddBlock<kW>(acc, low, high, head, p.dx[at], p.sx[at]);
  }
  _mm512_storeu_ps(y, acc);
}

// acc plus block blk of a row past the last whole group (the file's layout) against x's codes c of
// that block (256 h + l each), d_x dx, start and min term sx: AddBlock's arithmetic for one lane.
template <WeightType kW>
HWY_INLINE float TailBlock(float acc, const uint8_t* HWY_RESTRICT blk, const int32_t* c, float dx, int32_t start,
                           float sx) {
  constexpr PairFormat kF = kPair<kW>;
  uint32_t sum = static_cast<uint32_t>(start);  // wrapping as the vector lanes do
  for (size_t i = 0; i < 32; ++i) {
    int32_t u;  // unsigned, as the vector kernels meet it
    if constexpr (kW == WeightType::kQ8_0) {
      u = blk[kF.codes + i] ^ 0x80;
    } else {
      const uint8_t byte = blk[kF.codes + i % 16];
      u = i < 16 ? byte & 0x0F : byte >> 4;
      if constexpr (kF.high != 0) u |= static_cast<int32_t>((Load32(blk + kF.high) >> i) & 1u) << 4;
    }
    sum += static_cast<uint32_t>(u * c[i]);
  }
  acc = std::fma(static_cast<float>(static_cast<int32_t>(sum)), _cvtsh_ss(Load16(blk)) * dx, acc);
  if constexpr (kF.min) acc = std::fma(_cvtsh_ss(Load16(blk + 2)), sx, acc);
  return acc;
}

// A code of x from its bytes h and l.
HWY_INLINE int32_t Code(uint8_t high, uint8_t low) {
  return static_cast<int8_t>(high) * 256 + static_cast<int8_t>(low);
}

// y of token j of the panel for one row past the last whole group (the file's layout).
template <WeightType kW>
HWY_INLINE float PanelTailRow(const uint8_t* HWY_RESTRICT row, size_t nb, const Panel& p, size_t j) {
  float acc = 0.0f;
  for (size_t b = 0; b < nb; ++b) {
    int32_t c[32];
    for (size_t i = 0; i < 32; ++i) {
      const uint8_t* chunk = p.chunk(b, i / 4, j);
      c[i] = Code(chunk[4 + i % 4], chunk[i % 4]);
    }
    const size_t at = p.at(b, j);
    acc = TailBlock<kW>(acc, row + b * kPair<kW>.block_bytes, c, p.dx[at], p.start[2 * at], p.sx[at]);
  }
  return acc;
}

#else

inline bool RowGroupsRun(const MatmulArgs&) { return false; }
inline bool PrepareRowGroupsX(const MatmulArgs&, void*) { return false; }

#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_INL_H_
