// Attention kernels, per Highway target: online softmax over K/V tiles of kAttnKvTile keys (flash
// attention), never a T_q × T_kv score matrix. A task (attention_task-inl.h) is one kv head × up
// to attention_q_rows(group) query rows (tokens × all query heads of the group): each K/V tile is
// read once per task and serves every query head of the group. Two tilings, which
// attention_tiling.h chooses: prefill (attention_prefill-inl.h), lanes along query rows, and
// decode (attention_decode-inl.h), lanes along head_dim. The maths both share is in
// attention_math-inl.h, K/V row access and widening in kv_load-inl.h.
//
// Specialized at compile time for head_dim 64 and 128 (kDim); kDim = 0 is the runtime-head_dim
// code for every head_dim 1..576. No allocation: everything lives in the caller's scratch
// (layout: AttentionScratchLayout in headway/detail/attention_policy.hpp), in vector registers, or on
// ~1.6 KiB of stack (decode: the K and V row pointers of one tile and the K row pointers of the
// next).
//
// Each tiling compiles in its own translation unit (attention_range.h); this file holds what
// attention.cc compiles: the merge of split-KV chunks' partials and the hooks tests call.

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_decode_int8-inl.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_tiling.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

// out = Σ_c exp(m_c − M) · o_c / Σ_c exp(m_c − M) · l_c, M = max_c m_c, chunks in order.
HWY_NOINLINE void AttentionMergeF32(const AttentionArgs& a, uint32_t kv_head, uint32_t n_chunks,
                                    const AttentionPartials& p) {
  const attn::DF df;
  const size_t n = hn::Lanes(df);
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const size_t all_rows = size_t{a.t_q} * group;
  const size_t d = a.head_dim;
  for (uint32_t t = 0; t < a.t_q; ++t) {
    const bool empty = detail::SeesNoKey(a, t);
    for (uint32_t h = 0; h < group; ++h) {
      const size_t row = size_t{t} * group + h;
      float* out = a.o + size_t{t} * a.o_token_stride + (size_t{kv_head} * group + h) * d;
      for (size_t x = 0; x < d; ++x) out[x] = 0.0f;
      if (empty) continue;
      float m_max = attn::kNegInf;
      for (uint32_t c = 0; c < n_chunks; ++c) {
        const float m = p.m[c * all_rows + row];
        if (m != m) {
          m_max = m;
          break;
        }
        if (m > m_max) m_max = m;
      }
      float l_sum = 0.0f;
      for (uint32_t c = 0; c < n_chunks; ++c) {
        const float m = p.m[c * all_rows + row];
        const float l = p.l[c * all_rows + row];
        // The chunk saw no key of this row. A chunk whose logits were NaN may keep m = −inf with
        // l NaN (the decode tiling's running max skips NaN): it is merged, and the row is NaN
        // even where chunk 0's sink gives the row a finite maximum.
        if (m == attn::kNegInf && l == 0.0f) continue;
        const float w = hn::GetLane(ExpNonPositive(df, hn::Set(df, m - m_max)));
        l_sum += w * l;
        const float* o = p.o + (c * all_rows + row) * d;
        const attn::VF wv = hn::Set(df, w);
        size_t x = 0;
        for (; x + n <= d; x += n) {
          hn::StoreU(hn::MulAdd(wv, hn::LoadU(df, o + x), hn::LoadU(df, out + x)), df, out + x);
        }
        for (; x < d; ++x) out[x] += w * o[x];
      }
      if (l_sum == 0.0f) continue;  // the general mask hid every key the row sees: zeros
      for (size_t x = 0; x < d; ++x) out[x] /= l_sum;
    }
  }
}

HWY_NOINLINE const char* AttentionTargetName() { return HEADWAY_SIMD_TARGET_NAME; }

HWY_NOINLINE bool AttentionQuantizesQuery(const AttentionArgs& a) {
  return detail::UseDecodeTiling(a) && attn::DecodeQuantizesQuery(a);
}

// y[i] = the softmax's exp of x[i] (ExpNonPositive), for tests.
HWY_NOINLINE void SoftmaxExp(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  const attn::DF df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(ExpNonPositive(df, hn::LoadU(df, x + i)), df, y + i);
  if (i == n) return;
  HWY_ALIGN float tail[kAttnMaxLanes] = {};
  for (size_t j = i; j < n; ++j) tail[j - i] = x[j];
  hn::Store(ExpNonPositive(df, hn::Load(df, tail)), df, tail);
  for (size_t j = i; j < n; ++j) y[j] = tail[j - i];
}

// y[i] = x[i] widened from f16 as K/V rows are (WidenF16, and KvTail for the last partial vector).
HWY_NOINLINE void WidenF16Values(const uint16_t* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  const attn::DF df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(WidenF16(df, x + i), df, y + i);
  if (i == n) return;
  HWY_ALIGN float tail[kAttnMaxLanes];
  hn::Store(KvTail<KvType::kF16>(df, reinterpret_cast<const char*>(x), i, n), df, tail);
  for (size_t j = i; j < n; ++j) y[j] = tail[j - i];
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_INL_H_
