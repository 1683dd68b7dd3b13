// One attention task, per Highway target: one kv head × up to attention_q_rows(group) query rows
// (tokens × all query heads of the group; each K/V tile is read once per task and serves every
// query head of the group), its regions of the caller's scratch (AttentionScratchLayout,
// headway/detail/attention_policy.hpp), each row's visible keys, and what it writes at the end:
// the normalized output, or the partials of a chunk of keys. Q and O sit in scratch transposed
// for the prefill tiling (Qᵀ, Oᵀ [D][rows]) and by row for the decode tiling ([rows][d_pad]).

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_TASK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_TASK_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_TASK_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_TASK_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_range.h"
#include "simd/attention/attention_tiling.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

// One task: kv head g, query tokens [t0, t0 + nt), keys restricted to [key_begin, key_end).
// Row r is token t0 + r / group, query head g · group + r % group.
struct Task {
  const AttentionArgs* a = nullptr;
  uint32_t g = 0;
  uint32_t group = 0;
  uint32_t t0 = 0;
  uint32_t nt = 0;
  size_t rows = 0;
  size_t rpad = 0;  // prefill: rows rounded up to whole vectors
  int64_t key_begin = 0;
  int64_t key_end = 0;
  size_t d = 0;
  size_t d_pad = 0;
  float q_scale = 0.0f;  // scale, or scale / softcap: Q is pre-multiplied
  bool q_int8 = false;   // decode: Q is quantized for integer Q·Kᵀ (attention_decode_int8-inl.h)
  // Scratch regions (AttentionScratchLayout in headway/detail/attention_policy.hpp).
  float* q = nullptr;
  float* o = nullptr;
  float* m = nullptr;
  float* l = nullptr;
  int32_t* lo = nullptr;  // per tile; prefill: inclusive [lo, hi]; decode: [lo, hi)
  int32_t* hi = nullptr;
  int64_t* klo = nullptr;  // absolute, inclusive; klo > khi when empty
  int64_t* khi = nullptr;
  float* slope = nullptr;  // prefill ALiBi: each row's slope, and its position minus the tile's first key
  int32_t* prel = nullptr;
  float* s = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  // The key span being run (attention_tiling.h): a row's position is its token + pos_offset
  // (t_kv − t_q, and sink_gap more in the sink span); the current tile starts at key tile_base.
  int64_t pos_offset = 0;
  int64_t tile_base = 0;
  // Prefill: key i of the current tile at kt + i · d_pad, vt likewise: the widened copies k and v,
  // or the cache rows themselves where they are f32 and already in that layout (RowsRun).
  const float* kt = nullptr;
  const float* vt = nullptr;
  // Keys any row sees, and keys every row sees.
  int64_t union_lo = 0, union_hi = -1;
  int64_t common_lo = 0, common_hi = -1;
};

// head_dim and the widened row length (head_dim rounded up to kAttnMaxLanes) of the kernel
// specialized for kDim (compile-time constants), or the task's own for the generic one (kDim 0).
template <size_t kDim>
HWY_INLINE size_t HeadDim(const Task& t) {
  return kDim ? kDim : t.d;
}
template <size_t kDim>
HWY_INLINE size_t PaddedHeadDim(const Task& t) {
  return kDim ? static_cast<size_t>(align_up(kDim, kAttnMaxLanes)) : t.d_pad;
}

HWY_INLINE const float* QueryRow(const Task& t, size_t r) {
  const AttentionArgs& a = *t.a;
  const size_t token = t.t0 + r / t.group;
  const size_t head = size_t{t.g} * t.group + r % t.group;
  return a.q + token * a.q_token_stride + head * a.head_dim;
}

// Carves the scratch and resets m, l, O: to the empty softmax (m = −inf, l = 0), or, where the
// task starts from the sink (from_sink: the whole row or split-KV chunk 0) and args.sinks is set,
// to the sink alone (m = s_h, l = e^0 = 1, O = 0). The running max is in the units of the final
// logits (scale folded into Q, softcap applied to the scores before the softmax, natural exp), so
// s_h enters as it is. Each row's ALiBi slope goes to scratch (0 for padding rows).
inline HEADWAY_KERNEL_SHARED void SetupTask(Task& t, const AttentionArgs& a, void* scratch, uint32_t g, uint32_t t0,
                                            uint32_t nt, bool decode, bool from_sink) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const AttentionScratchLayout layout = attention_scratch_layout(a.head_dim, group);
  char* base = static_cast<char*>(scratch);
  t.a = &a;
  t.g = g;
  t.group = group;
  t.t0 = t0;
  t.nt = nt;
  t.rows = size_t{nt} * group;
  t.rpad = decode ? t.rows : (t.rows + n - 1) / n * n;
  t.d = a.head_dim;
  t.d_pad = layout.d_pad;
  t.q_scale = a.softcap > 0.0f ? a.scale / a.softcap : a.scale;
  t.q = reinterpret_cast<float*>(base + layout.q);
  t.o = reinterpret_cast<float*>(base + layout.o);
  t.m = reinterpret_cast<float*>(base + layout.m);
  t.l = reinterpret_cast<float*>(base + layout.l);
  t.lo = reinterpret_cast<int32_t*>(base + layout.lo);
  t.hi = reinterpret_cast<int32_t*>(base + layout.hi);
  t.klo = reinterpret_cast<int64_t*>(base + layout.klo);
  t.khi = reinterpret_cast<int64_t*>(base + layout.khi);
  t.slope = reinterpret_cast<float*>(base + layout.slope);
  t.prel = reinterpret_cast<int32_t*>(base + layout.prel);
  t.s = reinterpret_cast<float*>(base + layout.s);
  t.k = reinterpret_cast<float*>(base + layout.k);
  t.v = reinterpret_cast<float*>(base + layout.v);
  const float* sinks = from_sink ? a.sinks : nullptr;
  for (size_t r = 0; r < t.rpad; ++r) {
    const size_t head = size_t{g} * group + r % group;
    t.m[r] = r < t.rows && sinks != nullptr ? sinks[head] : kNegInf;
    t.l[r] = r < t.rows && sinks != nullptr ? 1.0f : 0.0f;
    t.slope[r] = r < t.rows && a.alibi_slopes != nullptr ? a.alibi_slopes[head] : 0.0f;
  }
  std::memset(t.o, 0, t.rpad * t.d_pad * sizeof(float));
}

// Points the task at one key span (attention_tiling.h) of keys [key_begin, key_end): span_args
// (args, or a copy that maps the span's keys onto its rows), each row's visible keys of the span,
// the keys any row sees and the keys every row sees.
inline HEADWAY_KERNEL_SHARED void SetSpan(Task& t, const AttentionArgs& span_args, bool sink_span, int64_t key_begin,
                                          int64_t key_end) {
  const AttentionArgs& a = span_args;
  t.a = &a;
  t.key_begin = key_begin;
  t.key_end = key_end;
  t.pos_offset = int64_t{a.t_kv} - int64_t{a.t_q} + (sink_span ? int64_t{a.sink_gap} : 0);
  t.union_lo = std::numeric_limits<int64_t>::max();
  t.union_hi = -1;
  t.common_lo = 0;
  t.common_hi = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < t.rpad; ++r) {
    int64_t lo = 1, hi = 0;  // padding rows see nothing
    if (r < t.rows) {
      const uint32_t token = t.t0 + static_cast<uint32_t>(r / t.group);
      const detail::KeyRange kr = sink_span ? detail::VisibleSinkKeys(a, token) : detail::VisibleKeys(a, token);
      lo = kr.lo > key_begin ? kr.lo : key_begin;
      hi = kr.hi < key_end - 1 ? kr.hi : key_end - 1;
      if (lo <= hi) {
        if (lo < t.union_lo) t.union_lo = lo;
        if (hi > t.union_hi) t.union_hi = hi;
      }
      if (lo > t.common_lo) t.common_lo = lo;
      if (hi < t.common_hi) t.common_hi = hi;
    }
    t.klo[r] = lo;
    t.khi[r] = hi;
  }
}

// Row r's position minus the current tile's first key (ALiBi's distance is this minus the key's
// place in the tile).
HWY_INLINE int64_t RowTilePosition(const Task& t, size_t r) {
  return int64_t{t.t0} + static_cast<int64_t>(r / t.group) + t.pos_offset - t.tile_base;
}

// Oᵀ[x][r] of row r (prefill).
HWY_INLINE float RowsOut(const Task& t, size_t r, size_t x) { return t.o[x * t.rpad + r]; }

// O[r][x] (decode).
HWY_INLINE float DotOut(const Task& t, size_t r, size_t x) { return t.o[r * t.d_pad + x]; }

// Normalized output of the task's rows into O (zeros for rows that see no key).
template <bool kDecode>
inline HEADWAY_KERNEL_SHARED void WriteOutput(const Task& t) {
  const AttentionArgs& a = *t.a;
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t token = t.t0 + r / t.group;
    const size_t head = size_t{t.g} * t.group + r % t.group;
    float* out = a.o + token * a.o_token_stride + head * a.head_dim;
    // l is 0 only where every key the row sees was hidden by the general mask (the maximum's own
    // weight is 1, a sink's too).
    if (detail::SeesNoKey(a, static_cast<uint32_t>(token)) || t.l[r] == 0.0f) {
      for (size_t x = 0; x < t.d; ++x) out[x] = 0.0f;
      continue;
    }
    const float l = t.l[r];
    for (size_t x = 0; x < t.d; ++x) out[x] = (kDecode ? DotOut(t, r, x) : RowsOut(t, r, x)) / l;
  }
}

// Partials of the task's rows for chunk c.
template <bool kDecode>
inline HEADWAY_KERNEL_SHARED void WritePartials(const Task& t, uint32_t c, const AttentionPartials& p) {
  const AttentionArgs& a = *t.a;
  const size_t all_rows = size_t{a.t_q} * t.group;
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t row = size_t{c} * all_rows + size_t{t.t0} * t.group + r;
    p.m[row] = t.m[r];
    p.l[row] = t.l[r];
    float* o = p.o + row * a.head_dim;
    for (size_t x = 0; x < t.d; ++x) o[x] = kDecode ? DotOut(t, r, x) : RowsOut(t, r, x);
  }
}

// SetupTask, WriteOutput and WritePartials run once per task and stay out of line, one copy each
// in the linked kernels (HEADWAY_KERNEL_SHARED), where every tiling's translation unit and head_dim
// specialization would otherwise inline its own: the size that counts on microcontrollers.

// The ring of keys [sink_tokens, t_kv) of a call with sink tokens and a ring: args with the K/V
// bases moved to row sink_tokens and a ring of kv_ring_rows − sink_tokens rows, so that key j
// (>= sink_tokens) lands in row sink_tokens + (kv_first_row + j − sink_tokens) mod that.
inline AttentionArgs WindowSpanArgs(const AttentionArgs& a) {
  AttentionArgs w = a;
  if (a.kv_ring_rows == 0 || a.sink_tokens == 0) return w;
  const size_t shift = static_cast<size_t>(KvOffsetBytes(a.kv_type, uint64_t{a.sink_tokens} * a.kv_row_stride));
  w.k = static_cast<const char*>(a.k) + shift;
  w.v = static_cast<const char*>(a.v) + shift;
  w.kv_ring_rows = a.kv_ring_rows - a.sink_tokens;
  w.kv_first_row = (a.kv_first_row + w.kv_ring_rows - a.sink_tokens % w.kv_ring_rows) % w.kv_ring_rows;
  return w;
}

// The tasks that cover the range's tokens, aligned to multiples of the task size in absolute token
// index (a row's task does not depend on the range of the call): run(task) takes each task over
// its keys, span by span (the sink span, with the rows as they are, then the window span), then its
// output or partials are written.
template <bool kDecode, class Run>
inline void RunTasks(const detail::AttentionRange& r, const Run& run) {
  const AttentionArgs& a = *r.args;
  const uint32_t per_task = attention_q_tile(a.n_heads / a.n_kv_heads);
  const bool from_sink = r.partials == nullptr || r.chunk_index == 0;
  const int64_t sink_keys = detail::SinkKeys(a);
  const int64_t sink_end = r.key_end < sink_keys ? r.key_end : sink_keys;
  const int64_t window_begin = r.key_begin > sink_keys ? r.key_begin : sink_keys;
  AttentionArgs sink_args = a;
  sink_args.kv_ring_rows = 0;  // sink keys sit in rows 0..sink_tokens − 1
  const AttentionArgs window_args = WindowSpanArgs(a);
  for (uint32_t t0 = r.q_begin; t0 < r.q_end;) {
    const uint64_t aligned_end = (uint64_t{t0} / per_task + 1) * per_task;
    const uint32_t t1 = aligned_end < r.q_end ? static_cast<uint32_t>(aligned_end) : r.q_end;
    Task t;
    SetupTask(t, a, r.scratch, r.kv_head, t0, t1 - t0, kDecode, from_sink);
    // One call site of run: each tiling's loops are inlined once per head_dim specialization.
    for (int span = 0; span < 2; ++span) {
      const bool sink_span = span == 0;
      if (sink_span ? r.key_begin >= sink_end : (window_begin >= r.key_end && sink_keys != 0)) continue;
      SetSpan(t, sink_span ? sink_args : window_args, sink_span, sink_span ? r.key_begin : window_begin,
              sink_span ? sink_end : r.key_end);
      run(t);
    }
    t.a = &a;
    if (r.partials != nullptr) {
      WritePartials<kDecode>(t, r.chunk_index, *r.partials);
    } else {
      WriteOutput<kDecode>(t);
    }
    t0 = t1;
  }
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_TASK_INL_H_
