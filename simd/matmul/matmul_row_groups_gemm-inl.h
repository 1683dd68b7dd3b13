// The GEMM (t > 1: a prefill's tokens) over q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K weights in row
// groups, and the call over them whatever t (a decode step is a panel of one token: the GEMV of
// matmul_row_groups-inl.h, or the K-quants' tile of one token, matmul_row_groups_k-inl.h), on x86
// with AVX-512 VNNI (Highway's AVX3_DL target), in integers as the decode GEMV: x in 16-bit codes
// per block of 32, each 32-bit lane one row of a group.
// A chunk of a group's codes (four weight bytes of its 16 rows) loads and unpacks once for
// kGemmTokens tokens, each of which meets it with two VPDPBUSDs (its codes' high and low bytes);
// the tile's sums stay in registers (two int32 and one f32 vector per token, 24 of 32).
//
// Each token's y is what a decode step of that token gives, bitwise: the same codes of x, the
// same exact integer sums, the same float steps in the same order (AddBlock, TailBlock).
// So a prefill's logits are its decode steps', and no row split or token split changes them.
//
// x is quantized a panel of tokens at a time into kGemmXBytes of stack (Panel: a chunk's codes of
// a tile's tokens side by side): one quantization per token for every row the call covers. Callers
// split a prefill over threads by tokens, not rows (matmul_token_task): each task quantizes only
// its own tokens. A group's codes (nb · 16 · block bytes: 14 KiB for q4_0 at in = 1536) stay in
// L1 while the panel's tiles pass over them.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_GEMM_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_GEMM_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_GEMM_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "headway/detail/row_groups.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"
#include "simd/matmul/matmul_row_groups-inl.h"
#include "simd/matmul/matmul_row_groups_k-inl.h"  // q4_K and q6_K

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HWY_TARGET == HWY_AVX3_DL

inline constexpr size_t kGemmTokens = 8;
inline constexpr size_t kGemmXBytes = 65536;
inline constexpr size_t kGemmPanel = 64;  // tokens quantized at once, at most
// A panel holds three tokens at the widest x at least (Panel::bytes: 2 code bytes a value and 16
// bytes of d_x, min term and starts a block).
static_assert(kGemmXBytes / (2 * kMaxQuantizedIn + 16 * (kMaxQuantizedIn / 32)) >= 3, "a panel of x fits");

// The tokens a panel of x holds at `in`.
inline size_t GemmPanelTokens(size_t in) {
  const size_t fit = kGemmXBytes / Panel::bytes(in, 1);
  return fit < kGemmPanel ? fit : kGemmPanel;
}

// y[j][0..16) (token j at y + j · y_stride) of the group at `group` against tokens j0 .. j0 + T of
// the panel.
template <WeightType kW, size_t T>
HWY_INLINE void GemmGroup(const uint8_t* HWY_RESTRICT group, size_t nb, const Panel& p, size_t j0, float* y,
                          size_t y_stride) {
  constexpr size_t kH = row_groups::head_bytes(kW), kC = kPair<kW>.block_bytes - kH;
  const uint8_t* heads = group + kGroupRows * nb * kC;
  const __m512i flip = _mm512_set1_epi8(-128);
  const size_t step = p.n * 8;  // from one chunk of x's codes to the next
  __m512 acc[T];
#pragma GCC unroll 8
  for (size_t j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* codes = group + b * kGroupRows * kC;
    const uint8_t* head = heads + b * kGroupRows * kH;
    const uint8_t* x = p.chunk(b, 0, j0);  // token j's chunk c at x + c · step + 8j: l, then h
    __m512i low[T], high[T];
#pragma GCC unroll 8
    for (size_t j = 0; j < T; ++j) {
      low[j] = _mm512_set1_epi32(p.start[2 * p.at(b, j0 + j)]);
      high[j] = _mm512_setzero_si512();
    }
    if constexpr (kW == WeightType::kQ8_0) {
      for (size_t k = 0; k < 8; ++k, x += step) {
        const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(codes + k * 64), flip);
#pragma GCC unroll 8
        for (size_t j = 0; j < T; ++j) {
          low[j] = DotU8S8Broadcast(low[j], u, x + 8 * j);
          high[j] = DotU8S8Broadcast(high[j], u, x + 8 * j + 4);
        }
      }
    } else {
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kPair<kW>.high != 0) qh = _mm512_loadu_si512(head + row_groups::scale_bytes(kW) * kGroupRows);
      for (size_t k = 0; k < 4; ++k, x += step) {  // chunk k's low nibbles, and chunk k + 4's high ones
        __m512i lo, hi;
        NibbleChunk<kW>(codes, k, qh, &lo, &hi);
        const uint8_t* x4 = x + 4 * step;
#pragma GCC unroll 8
        for (size_t j = 0; j < T; ++j) {
          low[j] = DotU8S8Broadcast(low[j], lo, x + 8 * j);
          high[j] = DotU8S8Broadcast(high[j], lo, x + 8 * j + 4);
          low[j] = DotU8S8Broadcast(low[j], hi, x4 + 8 * j);
          high[j] = DotU8S8Broadcast(high[j], hi, x4 + 8 * j + 4);
        }
      }
    }
#pragma GCC unroll 8
    for (size_t j = 0; j < T; ++j) {
      acc[j] = AddBlock<kW>(acc[j], low[j], high[j], head, p.dx[p.at(b, j0 + j)], p.sx[p.at(b, j0 + j)]);
    }
  }
#pragma GCC unroll 8
  for (size_t j = 0; j < T; ++j) _mm512_storeu_ps(y + j * y_stride, acc[j]);
}

// The group's 16 rows against tokens j0 .. j0 + T of the panel; one token (a decode step) through
// the GEMV's own loop, whose integer sums are split in two chains (VPDPBUSD's latency would bound
// one token's) and whose rows are the GEMM's, bitwise.
template <WeightType kW, size_t T>
HWY_INLINE void GroupTile(const uint8_t* group, size_t nb, const Panel& p, size_t j0, float* y, size_t y_stride) {
  if constexpr (kSuperBlocks<kW>) GemmGroupK<kW, T>(group, nb, p, j0, y, y_stride);
  else if constexpr (T == 1) GemvGroup<kW>(group, nb, p, j0, y);
  else GemmGroup<kW, T>(group, nb, p, j0, y, y_stride);
}

// The group against the panel's tokens: tiles of kGemmTokens, then of 4, 2 and 1.
template <WeightType kW>
HWY_INLINE void GemmGroupTokens(const uint8_t* group, size_t nb, const Panel& p, float* y, size_t y_stride) {
  size_t j = 0;
  for (; j + kGemmTokens <= p.n; j += kGemmTokens)
    GroupTile<kW, kGemmTokens>(group, nb, p, j, y + j * y_stride, y_stride);
  if (p.n - j >= 4) {
    GroupTile<kW, 4>(group, nb, p, j, y + j * y_stride, y_stride);
    j += 4;
  }
  if (p.n - j >= 2) {
    GroupTile<kW, 2>(group, nb, p, j, y + j * y_stride, y_stride);
    j += 2;
  }
  if (p.n - j >= 1) GroupTile<kW, 1>(group, nb, p, j, y + j * y_stride, y_stride);
}

// A block's bytes and values in W of type kW.
template <WeightType kW>
inline constexpr size_t kBlockBytes = kW == WeightType::kQ4_K   ? 144
                                      : kW == WeightType::kQ6_K ? 210
                                                                : kPair<kW>.block_bytes;
template <WeightType kW>
inline constexpr size_t kBlockValues = kSuperBlocks<kW> ? 256 : 32;

// y[j][o_begin .. o_end) for the panel's tokens (token j at y + j · y_stride).
template <WeightType kW>
HWY_INLINE void RowsOverPanel(const MatmulArgs& a, const Panel& p, float* y, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / kBlockValues<kW>, grouped = a.out / kGroupRows * kGroupRows;
  const size_t group_bytes = kGroupRows * nb * kBlockBytes<kW>;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  for (size_t g = o_begin / kGroupRows; g * kGroupRows < o_end && g * kGroupRows < grouped; ++g) {
    const size_t first = g * kGroupRows;
    if (first >= o_begin && first + kGroupRows <= o_end) {
      GemmGroupTokens<kW>(w + g * group_bytes, nb, p, y + first, a.y_stride);
      continue;
    }
    alignas(64) float part[kGemmPanel * kGroupRows];  // a group the row range cuts: the rows asked for alone
    GemmGroupTokens<kW>(w + g * group_bytes, nb, p, part, kGroupRows);
    for (size_t j = 0; j < p.n; ++j) {
      for (size_t o = first < o_begin ? o_begin : first; o < first + kGroupRows && o < o_end; ++o) {
        y[j * a.y_stride + o] = part[j * kGroupRows + o - first];
      }
    }
  }
  for (size_t o = o_begin > grouped ? o_begin : grouped; o < o_end; ++o) {
    const uint8_t* row = w + o * nb * kBlockBytes<kW>;
    for (size_t j = 0; j < p.n; ++j) {
      if constexpr (kSuperBlocks<kW>) y[j * a.y_stride + o] = TailRowK<kW>(row, nb, p, j);
      else y[j * a.y_stride + o] = PanelTailRow<kW>(row, nb, p, j);
    }
  }
}

template <WeightType kW>
HWY_NOINLINE void MatmulRowGroupsT(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.t == 1 && a.x_prepared != nullptr) {  // a decode step's x, quantized once for every row task
    RowsOverPanel<kW>(a, Panel(const_cast<void*>(a.x_prepared), a.in, 1), a.y, o_begin, o_end);
    return;
  }
  const size_t panel = GemmPanelTokens(a.in);
  alignas(64) uint8_t room[kGemmXBytes];
  for (size_t t0 = 0; t0 < a.t; t0 += panel) {
    const Panel p(room, a.in, a.t - t0 < panel ? a.t - t0 : panel);
    QuantizePanel<kW>(a.x + t0 * a.x_stride, a.x_stride, a.in, p);
    RowsOverPanel<kW>(a, p, a.y + t0 * a.y_stride, o_begin, o_end);
  }
}

// The decode step and the GEMM over row groups: a decode step is a panel of one token.
HWY_INLINE void MatmulRowGroups(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  WithRowGroupsType(a.w_type, [&](auto w) { MatmulRowGroupsT<decltype(w)::value>(a, o_begin, o_end); });
}

#else

inline size_t GemmPanelTokens(size_t) { return 0; }
inline void MatmulRowGroups(const MatmulArgs&, size_t, size_t) {}

#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_ROW_GROUPS_GEMM_INL_H_
