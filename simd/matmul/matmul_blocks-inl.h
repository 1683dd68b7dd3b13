// y = x · Wᵀ per Highway target with W in one of ggml's block formats (q8_0, q4_0, q4_1, q5_0,
// q5_1, q4_K, q5_K, q6_K: layouts in headway/ggml_types.hpp), kept as the file holds them. Included
// by matmul-inl.h, whose register blocks do the multiply-adds.
//
// The weights are decoded a tile at a time: kTileRows rows × kChunkValues values (whole K-quant
// super-blocks and 32-value blocks) into f32 on the stack, then every token of x meets the tile
// in the 4 × 4 register blocks (4 × 1 for a single token). Decoding is paid once per weight per
// call, however many tokens share it. y[i][o] is the sum over the chunks of `in`, in order, of the
// register block's sum over the chunk: the same for t == 1 and t > 1, and for any split of the
// output rows (the tiles of a row never depend on its neighbours). Where the CPU multiplies int8
// vectors (matmul_int8-inl.h: AVX-512 VNNI, AVX-VNNI, Arm SDOT), a decode step (t == 1) over q8_0,
// q4_0, q4_1, q5_0, q5_1, q4_K or q6_K runs in integers instead, x quantized as ggml quantizes its
// activations; on Helium over q8_0 (x in 16-bit codes) and q4_0. Over W in row groups on AVX-512
// VNNI a decode step and a prefill alike run in integers with x in 16-bit codes
// (matmul_row_groups-inl.h, matmul_row_groups_gemm-inl.h); on the other targets W in row groups
// decodes to the same tiles, each block's bytes gathered back into ggml's order first.
//
// A tile of 16 rows × 1024 values on 64-bit hosts (64 KiB of stack, in L2): each token's x chunk
// loaded from the cache serves 16 rows, and the register blocks reduce their lanes once per 1024
// values; 4 × 256 elsewhere (4 KiB: microcontrollers and 32-bit boards).

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_BLOCKS_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_BLOCKS_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_BLOCKS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "headway/detail/ggml_blocks.hpp"
#include "headway/detail/row_groups.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"
#include "simd/matmul/matmul_int8-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HWY_ARCH_X86_64 || HWY_ARCH_ARM_A64
inline constexpr size_t kTileRows = 16;
inline constexpr size_t kChunkValues = 1024;
#else
inline constexpr size_t kTileRows = 4;  // microcontrollers and 32-bit boards: a small stack
inline constexpr size_t kChunkValues = 256;
#endif
static_assert(kChunkValues % ggml_blocks::kMaxBlockValues == 0, "a chunk is whole blocks of every format");

// tile[r · kChunkValues + i] = W[o0 + r][k0 + i] for r < rows, i < n (n whole blocks).
HWY_INLINE void DecodeTile(const MatmulArgs& a, size_t row_bytes, size_t o0, size_t rows, size_t k0, size_t n,
                           float* HWY_RESTRICT tile) {
  const DTypeTraits& type = dtype_traits(a.w_type);
  const size_t bv = type.block_values, bb = type.block_bytes;
  const size_t kG = row_groups::kRows;
  // A whole group of 32-value blocks (16 of them fit a microcontroller's stack; 16 of the K-quants'
  // super-blocks would not): gathered at once.
  if (a.w_row_groups && bb <= row_groups::kMaxSmallBlockBytes && rows == kG && o0 % kG == 0 &&
      o0 + kG <= a.out / kG * kG) {
    uint8_t blocks[row_groups::kRows * row_groups::kMaxSmallBlockBytes];
    for (size_t i = 0; i < n; i += bv) {
      row_groups::group_blocks(a.w_type, static_cast<const uint8_t*>(a.w), a.in / bv, o0 / kG, (k0 + i) / bv, blocks);
      for (size_t r = 0; r < kG; ++r) ggml_blocks::decode_block(a.w_type, blocks + r * bb, tile + r * kChunkValues + i);
    }
    return;
  }
  if (a.w_row_groups) {  // the K-quants, rows of a group the range cuts, or past the last: a block at a time
    uint8_t block[row_groups::kMaxBlockBytes];
    for (size_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < n; i += bv) {
        row_groups::block(a.w_type, static_cast<const uint8_t*>(a.w), a.out, a.in, o0 + r, (k0 + i) / bv, block);
        ggml_blocks::decode_block(a.w_type, block, tile + r * kChunkValues + i);
      }
    }
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(a.w) + (o0 + r) * row_bytes + k0 / bv * bb;
    for (size_t i = 0; i < n; i += bv)
      ggml_blocks::decode_block(a.w_type, row + i / bv * bb, tile + r * kChunkValues + i);
  }
}

// The tile's rows against every token, into y (kAdd: onto the sums of the chunks before).
template <bool kAdd>
HWY_INLINE void TileTimesTokens(const MatmulArgs& t, size_t rows) {
  size_t o = 0;
  for (; o + 4 <= rows; o += 4) {
    size_t i = 0;
    for (; i + 4 <= t.t; i += 4) Block<WeightType::kF32, 4, 4, kAdd>(t, o, i);
    for (; i < t.t; ++i) Block<WeightType::kF32, 4, 1, kAdd>(t, o, i);
  }
  for (; o < rows; ++o) {
    size_t i = 0;
    for (; i + 4 <= t.t; i += 4) Block<WeightType::kF32, 1, 4, kAdd>(t, o, i);
    for (; i < t.t; ++i) Block<WeightType::kF32, 1, 1, kAdd>(t, o, i);
  }
}

HWY_NOINLINE void MatmulBlocks(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (RowGroupsRun(a)) return MatmulRowGroups(a, o_begin, o_end);  // over row groups, in integers
  if (IntegerGemv(a)) return MatmulInteger(a, o_begin, o_end);     // a decode step in integers
  const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(a.w_type, a.w_stride));
  HWY_ALIGN float tile[kTileRows * kChunkValues];
  for (size_t o = o_begin; o < o_end; o += kTileRows) {
    const size_t rows = o_end - o < kTileRows ? o_end - o : kTileRows;
    for (size_t k0 = 0; k0 < a.in; k0 += kChunkValues) {
      const size_t n = a.in - k0 < kChunkValues ? a.in - k0 : kChunkValues;
      DecodeTile(a, row_bytes, o, rows, k0, n, tile);
      MatmulArgs t = a;
      t.w = tile;
      t.w_type = WeightType::kF32;
      t.w_stride = kChunkValues;
      t.x = a.x + k0;
      t.in = n;
      t.y = a.y + o;
      if (k0 == 0) TileTimesTokens<false>(t, rows);
      else TileTimesTokens<true>(t, rows);
    }
  }
}

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_BLOCKS_INL_H_
