// q4_K and q6_K weights in row groups (headway/detail/row_groups.hpp) on x86 with AVX-512 VNNI
// (Highway's AVX3_DL target): a group's 16 rows against a tile of tokens of a Panel (x in 16-bit
// codes per block of 32, matmul_row_groups-inl.h), for the GEMM and, one token, the decode step.
// Included by matmul_row_groups_gemm-inl.h.
//
// A super-block of 256 values is 8 of x's blocks; each 64-byte chunk of codes gives, per 32-bit
// lane (a row), four unsigned weights of one x block, met by that block's four code bytes h and l
// (two VPDPBUSDs), exact in int32 as for the 32-value types. Per row, as ggml's dequantization:
//   q4_K  w = d · sc · q − dmin · m   (q a nibble; sc, m the sub-block's 6-bit scale and min)
//         y += (d · sc) · d_x · Σ q c,  then y −= (dmin · m) · d_x · Σ c   (the min term)
//   q6_K  w = d · sc · (q − 32)       (q 6 bits; sc an int8 scale per 16 values)
//         y += (d · sc) · d_x · (Σ q c − 32 Σ c) for each half of an x block (its own start)
// In row groups a q4_K chunk holds qs[4c .. 4c + 3] of each row: its low nibbles are values
// 64 (c / 8) + 4 (c % 8) .. + 3, its high nibbles those 32 after. A q6_K super-block's chunks
// 0 .. 31 are ql, 32 .. 47 qh; x block 4n + k of its half n reads ql chunk 16n + 8 (k % 2) + c's low
// (k < 2) or high nibbles and qh chunk 32 + 8n + c's bits 2k, 2k + 1 as the two high bits. The
// heads hold d (and dmin) of 16 rows as f16 vectors, then the scales as vectors whose lane r holds
// row r's scale bytes 4v .. 4v + 3.
//
// Rows past the last whole group keep the file's layout: TailRowK reads them as ggml lays a block
// out and takes the same integer sums and float steps one row at a time (y bitwise as in a group).

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_K_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_K_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_K_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_K_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "headway/detail/row_groups.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"
#include "simd/matmul/matmul_row_groups-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HWY_TARGET == HWY_AVX3_DL

// q4_K's 6-bit scale (min: kMin) of sub-block s of each lane's row, from its 12 scale bytes in v0,
// v1, v2 (bytes 0-3, 4-7, 8-11): ggml's get_scale_min_k4.
template <bool kMin>
HWY_INLINE __m512i Q4KScale(__m512i v0, __m512i v1, __m512i v2, unsigned s) {
  const __m512i low6 = _mm512_set1_epi32(63), low4 = _mm512_set1_epi32(0xF), top2 = _mm512_set1_epi32(0x30);
  if (s < 4) return _mm512_and_si512(_mm512_srli_epi32(kMin ? v1 : v0, 8 * s), low6);
  const unsigned i = s - 4;
  const __m512i low = _mm512_and_si512(_mm512_srli_epi32(v2, 8 * i + (kMin ? 4 : 0)), low4);
  return _mm512_or_si512(low, _mm512_and_si512(_mm512_srli_epi32(kMin ? v1 : v0, 8 * i + 2), top2));
}

// Chunk k of x block m of a q6_K super-block's codes as unsigned 6-bit weights (values 0 .. 63).
HWY_INLINE __m512i Q6KChunk(const uint8_t* codes, size_t m, size_t k) {
  const size_t n = m / 4, mm = m % 4;
  const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30);
  const __m512i ql = _mm512_loadu_si512(codes + (16 * n + 8 * (mm % 2) + k) * 64);
  const __m512i qh = _mm512_loadu_si512(codes + (32 + 8 * n + k) * 64);
  const __m512i nib = mm < 2 ? _mm512_and_si512(ql, low4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
  // qh's bits 2mm, 2mm + 1 to bits 4, 5 (16-bit shifts: the mask drops what crosses a byte).
  const __m512i hb = mm == 0   ? _mm512_slli_epi16(qh, 4)
                     : mm == 1 ? _mm512_slli_epi16(qh, 2)
                     : mm == 2 ? qh
                               : _mm512_srli_epi16(qh, 2);
  return _mm512_or_si512(nib, _mm512_and_si512(hb, top2));
}

// Chunk k of x block m of a q4_K super-block's codes as unsigned nibbles.
HWY_INLINE __m512i Q4KChunk(const uint8_t* codes, size_t m, size_t k) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i w = _mm512_loadu_si512(codes + (8 * (m / 2) + k) * 64);
  return m % 2 == 0 ? _mm512_and_si512(w, low4) : _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
}

// y[j][0..16) (token j at y + j · y_stride) of the group at `group` (nsb super-blocks a row)
// against tokens j0 .. j0 + T of the panel.
template <WeightType kW, size_t T>
HWY_INLINE void GemmGroupK(const uint8_t* HWY_RESTRICT group, size_t nsb, const Panel& p, size_t j0, float* y,
                           size_t y_stride) {
  constexpr size_t kH = row_groups::head_bytes(kW), kC = row_groups::code_bytes(kW);
  const uint8_t* heads = group + kGroupRows * nsb * kC;
  const size_t step = p.n * 8;  // from one chunk of x's codes to the next
  __m512 acc[T];
#pragma GCC unroll 8
  for (size_t j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  __m512i low[T], high[T];
  // Starts the sums of x block b (its half h: q6_K's scales cover 16 values) at its start.
  const auto restart = [&](size_t b, size_t h) {
#pragma GCC unroll 8
    for (size_t j = 0; j < T; ++j) {
      low[j] = _mm512_set1_epi32(p.start[2 * p.at(b, j0 + j) + h]);
      high[j] = _mm512_setzero_si512();
    }
  };
  // Adds the sums of x block b (or of its half) at the rows' scales dws.
  const auto add = [&](size_t b, __m512 dws) {
#pragma GCC unroll 8
    for (size_t j = 0; j < T; ++j) {
      const __m512i sum = _mm512_add_epi32(_mm512_slli_epi32(high[j], 8), low[j]);
      const __m512 dx = _mm512_set1_ps(p.dx[p.at(b, j0 + j)]);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dws, dx), acc[j]);
    }
  };
  const auto dot = [&](__m512i u, const uint8_t* x) {
#pragma GCC unroll 8
    for (size_t j = 0; j < T; ++j) {
      low[j] = DotU8S8Broadcast(low[j], u, x + 8 * j);
      high[j] = DotU8S8Broadcast(high[j], u, x + 8 * j + 4);
    }
  };
  for (size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* codes = group + sb * kGroupRows * kC;
    const uint8_t* head = heads + sb * kGroupRows * kH;
    if constexpr (T == 1) {  // a decode step streams the codes: ask for them ahead
      for (size_t line = 0; line < kC / 4; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(codes + line * 64 + kPrefetchBytes), _MM_HINT_T0);
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(head)));
    for (size_t m = 0; m < 8; ++m) {
      const size_t b = sb * 8 + m;
      const uint8_t* x = p.chunk(b, 0, j0);  // token j's chunk c at x + c · step + 8j: l, then h
      if constexpr (kW == WeightType::kQ4_K) {
        restart(b, 0);
        for (size_t k = 0; k < 8; ++k) dot(Q4KChunk(codes, m, k), x + k * step);
        const __m512i v0 = _mm512_loadu_si512(head + 64), v1 = _mm512_loadu_si512(head + 128),
                      v2 = _mm512_loadu_si512(head + 192);
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(head + 32)));
        const __m512 dws = _mm512_mul_ps(d, _mm512_cvtepi32_ps(Q4KScale<false>(v0, v1, v2, static_cast<unsigned>(m))));
        const __m512 mws =
            _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(Q4KScale<true>(v0, v1, v2, static_cast<unsigned>(m))));
        add(b, dws);
#pragma GCC unroll 8
        for (size_t j = 0; j < T; ++j) acc[j] = _mm512_fnmadd_ps(mws, _mm512_set1_ps(p.sx[p.at(b, j0 + j)]), acc[j]);
      } else {  // q6_K: a scale for each half of the block
        for (size_t h = 0; h < 2; ++h) {
          restart(b, h);
          for (size_t k = 4 * h; k < 4 * h + 4; ++k) dot(Q6KChunk(codes, m, k), x + k * step);
          const size_t is = 8 * (m / 4) + 2 * (m % 4) + h;  // the scale's index in the row's 16
          const __m512i v = _mm512_loadu_si512(head + 32 + (is / 4) * 64);
          const __m512i sc = _mm512_srai_epi32(_mm512_slli_epi32(v, static_cast<unsigned>(24 - 8 * (is % 4))), 24);
          add(b, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
        }
      }
    }
  }
#pragma GCC unroll 8
  for (size_t j = 0; j < T; ++j) _mm512_storeu_ps(y + j * y_stride, acc[j]);
}

// y of token j for one row past the last whole group (the file's layout, nsb super-blocks of
// ggml's), as GemmGroupK's lane of that row takes it.
template <WeightType kW>
HWY_INLINE float TailRowK(const uint8_t* HWY_RESTRICT row, size_t nsb, const Panel& p, size_t j) {
  constexpr size_t kBytes = kW == WeightType::kQ4_K ? 144 : 210;
  float acc = 0.0f;
  for (size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* blk = row + sb * kBytes;
    for (size_t m = 0; m < 8; ++m) {
      const size_t b = sb * 8 + m, at = p.at(b, j);
      const auto code = [&](size_t i) {
        const uint8_t* chunk = p.chunk(b, i / 4, j);
        return static_cast<uint32_t>(Code(chunk[4 + i % 4], chunk[i % 4]));
      };
      if constexpr (kW == WeightType::kQ4_K) {  // d, dmin, scales[12], qs[128]
        const uint8_t* sc = blk + 4;
        const uint8_t* qs = blk + 16 + 32 * (m / 2);
        const uint32_t s = static_cast<uint32_t>(m);
        const uint32_t scale = s < 4 ? sc[s] & 63 : (sc[s + 4] & 0xF) | ((sc[s - 4] >> 6) << 4);
        const uint32_t min = s < 4 ? sc[s + 4] & 63 : (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
        uint32_t sum = static_cast<uint32_t>(p.start[2 * at]);  // wrapping as the vector lanes do
        for (size_t i = 0; i < 32; ++i) sum += static_cast<uint32_t>(m % 2 ? qs[i] >> 4 : qs[i] & 0xF) * code(i);
        const float dws = _cvtsh_ss(Load16(blk)) * static_cast<float>(scale);
        const float mws = _cvtsh_ss(Load16(blk + 2)) * static_cast<float>(min);
        acc = std::fma(static_cast<float>(static_cast<int32_t>(sum)), dws * p.dx[at], acc);
        acc = std::fma(-mws, p.sx[at], acc);
      } else {  // ql[128], qh[64], scales[16] (int8), d
        const size_t n = m / 4, mm = m % 4;
        for (size_t h = 0; h < 2; ++h) {
          uint32_t sum = static_cast<uint32_t>(p.start[2 * at + h]);
          for (size_t i = 16 * h; i < 16 * h + 16; ++i) {  // value 128n + 32mm + i of the super-block
            const uint8_t ql = blk[64 * n + 32 * (mm % 2) + i], qh = blk[128 + 32 * n + i];
            const uint32_t q = (mm < 2 ? ql & 0xF : ql >> 4) | (((qh >> (2 * mm)) & 3u) << 4);
            sum += q * code(i);
          }
          const int8_t scale = static_cast<int8_t>(blk[192 + 8 * n + 2 * mm + h]);
          const float dws = _cvtsh_ss(Load16(blk + 208)) * static_cast<float>(scale);
          acc = std::fma(static_cast<float>(static_cast<int32_t>(sum)), dws * p.dx[at], acc);
        }
      }
    }
  }
  return acc;
}

#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_K_INL_H_
