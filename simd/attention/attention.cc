// Attention: the checked entry points of attention.h, which check their arguments and then run
// the unchecked ones the CPU driver calls after checking a call once. Those pick the tiling
// (attention_tiling.h) and run it once per kv head (attention_range.h: attention_prefill.cc,
// attention_decode_<type>.cc); this file compiles the merge of split-KV chunks and the test hooks of
// attention-inl.h for every target of the kernels (simd/CMakeLists.txt; x86: SSSE3, SSE4, AVX2,
// AVX3, AVX3_DL and the SCALAR baseline; AArch64: NEON, SVE, SVE2, SVE_256, SVE2_128).

#include "simd/attention/attention.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/attention/attention-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/attention/attention-inl.h"
#include "simd/attention/attention_range.h"
#include "simd/attention/attention_tiling.h"

#if HWY_ONCE
namespace headway {
namespace simd {

HWY_EXPORT(AttentionMergeF32);
HWY_EXPORT(AttentionTargetName);
HWY_EXPORT(AttentionQuantizesQuery);
HWY_EXPORT(SoftmaxExp);
HWY_EXPORT(WidenF16Values);

size_t attention_scratch_bytes(uint32_t head_dim, uint32_t group_size) {
  return static_cast<size_t>(attention_scratch_layout(head_dim, group_size).total);
}

const char* attention_args_error(const AttentionArgs& a) {
  if (a.head_dim == 0 || a.head_dim > kAttentionMaxHeadDim) return "head_dim must be in 1..576";
  if (a.n_heads == 0) return "n_heads must be at least 1";
  if (a.n_kv_heads == 0) return "n_kv_heads must be at least 1";
  if (a.n_heads % a.n_kv_heads != 0) return "n_heads is not a multiple of n_kv_heads";
  if (!dtype_stores_kv(a.kv_type)) return "kv_type is not a K/V dtype (dtype_stores_kv)";
  if (KvTypeIsBlock(a.kv_type) &&
      (a.kv_row_stride % kKvBlockValues != 0 || (a.n_kv_heads > 1 && a.kv_head_stride % kKvBlockValues != 0))) {
    return "kv_row_stride and kv_head_stride of a block format are not whole blocks of 32";
  }
  if (!std::isfinite(a.scale)) return "scale is not finite";
  if (!(a.softcap >= 0.0f) || !std::isfinite(a.softcap)) return "softcap must be 0 (off) or positive";
  if (a.sinks != nullptr) {
    for (uint32_t h = 0; h < a.n_heads; ++h) {
      if (!std::isfinite(a.sinks[h])) return "sinks holds a value that is not finite";
    }
  }
  if (a.alibi_slopes != nullptr) {
    for (uint32_t h = 0; h < a.n_heads; ++h) {
      if (!std::isfinite(a.alibi_slopes[h])) return "alibi_slopes holds a value that is not finite";
    }
  }
  if (a.sink_tokens != 0 && a.sink_tokens >= a.window) return "sink_tokens must be less than window";
  if (a.prefix != 0 && !a.causal) return "prefix needs causal";
  if (a.prefix > a.t_kv) return "prefix must be at most t_kv";
  if (a.prefix != 0 && a.kv_ring_rows != 0) return "prefix cannot run over a ring";
  if (a.window_symmetric && (a.causal || a.window == 0)) return "window_symmetric needs a window and no causal";
  if (a.mask_bool != nullptr && a.mask_additive != nullptr) return "mask_bool and mask_additive are both set";
  if ((a.mask_bool != nullptr || a.mask_additive != nullptr) && a.mask_row_stride < a.t_kv) {
    return "mask_row_stride is less than t_kv";
  }
  if (a.kv_ring_rows != 0) {
    if (a.sink_tokens >= a.kv_ring_rows) return "sink_tokens must be less than kv_ring_rows";
    if (a.kv_first_row >= a.kv_ring_rows - a.sink_tokens) return "kv_first_row is outside the ring";
    if (a.t_kv > a.kv_ring_rows) return "t_kv is more than kv_ring_rows";
  }
  const uint64_t width = uint64_t{a.n_heads} * a.head_dim;
  if (a.t_q > 0) {
    if (a.q == nullptr) return "q is null";
    if (a.o == nullptr) return "o is null";
    if (a.q_token_stride < width) return "q_token_stride is less than n_heads * head_dim";
    if (a.o_token_stride < width) return "o_token_stride is less than n_heads * head_dim";
  }
  if (a.t_kv > 0) {
    if (a.k == nullptr) return "k is null";
    if (a.v == nullptr) return "v is null";
    if (a.kv_row_stride < a.head_dim) return "kv_row_stride is less than head_dim";
  }
  return nullptr;
}

namespace {

// The translation unit that runs a call's ranges (attention_range.h).
using RangeRunner = void (*)(const detail::AttentionRange&);
RangeRunner RunnerFor(const AttentionArgs& a) {
  if (!detail::UseDecodeTiling(a)) return detail::attention_prefill_range;
  switch (a.kv_type) {
    case KvType::kF32: return detail::attention_decode_f32_range;
    case KvType::kF16: return detail::attention_decode_f16_range;
    case KvType::kQ8_0: return detail::attention_decode_q8_0_range;
    case KvType::kQ4_0: return detail::attention_decode_q4_0_range;
    default: return detail::attention_decode_bf16_range;
  }
}

bool ScratchOk(const AttentionArgs& a, const void* scratch, size_t bytes) {
  return scratch != nullptr && bytes >= attention_scratch_bytes(a.head_dim, a.n_heads / a.n_kv_heads);
}

}  // namespace

void attention_f32(const AttentionArgs& args, uint32_t kv_head_begin, uint32_t kv_head_end, uint32_t q_begin,
                   uint32_t q_end, void* scratch, size_t scratch_bytes) {
  if (attention_args_error(args) != nullptr) return;
  if (kv_head_begin >= kv_head_end || kv_head_end > args.n_kv_heads) return;
  if (q_begin >= q_end || q_end > args.t_q) return;
  if (!ScratchOk(args, scratch, scratch_bytes)) return;
  attention_f32_unchecked(args, kv_head_begin, kv_head_end, q_begin, q_end, scratch);
}

void attention_partial_f32(const AttentionArgs& args, uint32_t kv_head, uint32_t chunk_index, uint32_t chunk,
                           const AttentionPartials& partials, void* scratch, size_t scratch_bytes) {
  if (attention_args_error(args) != nullptr) return;
  if (kv_head >= args.n_kv_heads || chunk == 0 || args.t_q == 0) return;
  if (partials.m == nullptr || partials.l == nullptr || partials.o == nullptr) return;
  if (!ScratchOk(args, scratch, scratch_bytes)) return;
  attention_partial_f32_unchecked(args, kv_head, chunk_index, chunk, partials, scratch);
}

void attention_merge_f32(const AttentionArgs& args, uint32_t kv_head, uint32_t n_chunks,
                         const AttentionPartials& partials) {
  if (attention_args_error(args) != nullptr) return;
  if (kv_head >= args.n_kv_heads || args.t_q == 0) return;
  if (n_chunks > 0 && (partials.m == nullptr || partials.l == nullptr || partials.o == nullptr)) return;
  attention_merge_f32_unchecked(args, kv_head, n_chunks, partials);
}

void attention_f32_unchecked(const AttentionArgs& args, uint32_t kv_head_begin, uint32_t kv_head_end, uint32_t q_begin,
                             uint32_t q_end, void* scratch) {
  const RangeRunner run = RunnerFor(args);
  for (uint32_t g = kv_head_begin; g < kv_head_end; ++g) {
    run({.args = &args,
         .kv_head = g,
         .q_begin = q_begin,
         .q_end = q_end,
         .key_end = int64_t{args.t_kv},
         .scratch = scratch});
  }
}

void attention_partial_f32_unchecked(const AttentionArgs& args, uint32_t kv_head, uint32_t chunk_index, uint32_t chunk,
                                     const AttentionPartials& partials, void* scratch) {
  uint64_t key_begin = uint64_t{chunk_index} * chunk;  // < 2^64: both factors < 2^32
  if (key_begin > args.t_kv) key_begin = args.t_kv;
  uint64_t key_end = key_begin + chunk;
  if (key_end > args.t_kv) key_end = args.t_kv;
  RunnerFor(args)({.args = &args,
                   .kv_head = kv_head,
                   .q_end = args.t_q,
                   .key_begin = static_cast<int64_t>(key_begin),
                   .key_end = static_cast<int64_t>(key_end),
                   .scratch = scratch,
                   .partials = &partials,
                   .chunk_index = chunk_index});
}

void attention_merge_f32_unchecked(const AttentionArgs& args, uint32_t kv_head, uint32_t n_chunks,
                                   const AttentionPartials& partials) {
  HWY_DYNAMIC_DISPATCH(AttentionMergeF32)(args, kv_head, n_chunks, partials);
}

const char* attention_target_name() { return HWY_DYNAMIC_DISPATCH(AttentionTargetName)(); }

bool attention_decode_quantizes_query(const AttentionArgs& args) {
  return HWY_DYNAMIC_DISPATCH(AttentionQuantizesQuery)(args);
}

void softmax_exp(const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(SoftmaxExp)(x, y, n); }

void widen_f16(const uint16_t* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(WidenF16Values)(x, y, n); }

const char* attention_kernel_name(const AttentionArgs& args) {
  if (args.head_dim == 0 || args.head_dim > kAttentionMaxHeadDim || args.n_kv_heads == 0 ||
      args.n_heads % args.n_kv_heads != 0) {
    return "invalid";
  }
  const bool decode = detail::UseDecodeTiling(args);
  switch (detail::SpecializedDim(args)) {
    case 64: return decode ? "decode_d64" : "prefill_d64";
    case 128: return decode ? "decode_d128" : "prefill_d128";
    default: return decode ? "decode_generic" : "prefill_generic";
  }
}

int64_t attention_compiled_targets() { return HWY_TARGETS; }

int64_t cpu_supported_targets() { return HWY_SUPPORTED_TARGETS; }

void target_names(int64_t bits, char* out, size_t n) {
  if (n == 0) return;
  size_t used = 0;
  out[0] = '\0';
  // Highway's target bits: a lower bit is a better target, so lowest-first is best-first.
  for (int64_t rest = bits; rest != 0; rest &= rest - 1) {
    const char* name = hwy::TargetName(rest & -rest);
    const size_t len = std::strlen(name);
    const size_t sep = used == 0 ? 0 : 1;
    if (used + sep + len + 1 > n) return;
    if (sep != 0) out[used++] = ' ';
    std::memcpy(out + used, name, len);
    used += len;
    out[used] = '\0';
  }
}

}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
