// Attention kernels: the plain functions the runtime calls. Highway dispatch happens inside
// (dynamic on hosted x86/ARM, static where the target is fixed). Pure functions over pointers
// and shapes: no allocation, no I/O, no threads. Callers split work across threads by calling
// these on disjoint ranges; the split is fixed by the shapes, never by the thread count, so the
// result is bitwise identical for any number of threads.
//
// Semantics (the contract every backend meets):
//   O = softmax(scale · Q Kᵀ + mask) V, computed in f32 with an online softmax over K/V tiles.
//   Query row i (0 ≤ i < t_q) sits at position i + (t_kv − t_q) relative to the first key
//   (bottom-right alignment). causal: it sees key j iff j ≤ i + (t_kv − t_q). window W > 0:
//   additionally j > i + (t_kv − t_q) − W. softcap c > 0: logit = c · tanh(logit / c), applied
//   to the scaled logit before the mask; ALiBi adds −m_h·|p − j| after it. Sink tokens S keep
//   keys j < S visible through the window. A causal prefix P (prefix-LM) lets every row see keys
//   j < P as well. A general mask (mask_bool, mask_additive) hides keys or adds to the logits of
//   single entries. A row with no visible key gives zeros, never NaN.
//   Query head h reads kv head h / (n_heads / n_kv_heads).
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/detail/attention_policy.hpp"
#include "headway/dtype.hpp"

namespace headway {
namespace simd {

// K/V storage: the DTypes a KV cache stores (dtype_stores_kv: f32, IEEE f16 and bf16 values, or
// ggml's block formats q8_0 and q4_0, blocks of 32 values along head_dim with an f16 scale each,
// layout in headway/quantize.hpp). A block-format row of head_dim values takes ceil(head_dim / 32)
// blocks, the last one padded; strides are counted in values and are whole blocks (multiples of
// 32). Sizes come from the one dtype table (headway/dtype.hpp).
using KvType = DType;
inline constexpr uint32_t kKvBlockValues = kDTypeBlockValues;
constexpr bool KvTypeIsBlock(KvType t) { return dtype_is_block(t); }
constexpr uint32_t KvBlockBytes(KvType t) { return dtype_traits(t).block_bytes; }
// Bytes of `values` consecutive values of K/V storage from a row start (block types: whole
// blocks, values a multiple of 32).
constexpr uint64_t KvOffsetBytes(KvType t, uint64_t values) { return dtype_offset_bytes(t, values); }
// Bytes of one row of n values (block types: ceil(n / 32) blocks).
constexpr uint64_t KvRowBytes(KvType t, uint64_t n) { return dtype_row_bytes(t, n); }

inline constexpr uint32_t kAttentionMaxHeadDim = kMaxHeadDim;
// A call whose tasks have at most this many query rows (tokens × heads of one group) runs the
// decode tiling (dot products along head_dim); larger ones the prefill tiling (lanes along
// query rows).
inline constexpr uint32_t kAttentionDecodeMaxRows = 8;

// Testing and benchmarking: which tiling to run. kAuto chooses from the shapes.
enum class AttentionTiling : uint8_t { kAuto = 0, kPrefill, kDecode };

struct AttentionArgs {
  // Q [t_q, n_heads, head_dim] f32; row stride between tokens in floats (>= n_heads·head_dim).
  const float* q = nullptr;
  size_t q_token_stride = 0;
  // O [t_q, n_heads, head_dim] f32, same layout as Q with its own token stride.
  float* o = nullptr;
  size_t o_token_stride = 0;
  // K and V of kv head g, logical key j: base + g · kv_head_stride + row(j) · kv_row_stride
  // values of kv_type (block types: whole blocks, KvOffsetBytes), where row(j) = (kv_first_row + j) mod kv_ring_rows
  // when kv_ring_rows > 0 (a sliding-window ring), else j. Covers [t_kv, n_kv_heads, head_dim] as well as the cache's
  // [n_kv_heads, rows, head_dim].
  const void* k = nullptr;
  const void* v = nullptr;
  KvType kv_type = KvType::kF32;
  size_t kv_head_stride = 0;
  size_t kv_row_stride = 0;
  uint32_t kv_first_row = 0;
  uint32_t kv_ring_rows = 0;

  uint32_t t_q = 0;
  uint32_t t_kv = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;  // 1..576; 64 and 128 run compile-time-specialized code
  float scale = 0.0f;     // logit scale; the caller resolves the default 1/sqrt(head_dim)
  float softcap = 0.0f;   // 0 = off
  bool causal = false;
  uint32_t window = 0;  // 0 = no sliding window
  // Learned sink logits (gpt-oss), [n_heads] f32, finite; null = none. Sink s_h joins the softmax
  // of every row of query head h as one more logit with no value, after scale, softcap and mask:
  // o = Σ_j e^{l_j − m} v_j / (Σ_j e^{l_j − m} + e^{s_h − m}), m = max(max_j l_j, s_h). A row
  // that sees no key is 0 with or without it.
  const float* sinks = nullptr;
  // Sink tokens (StreamingLLM): keys j < sink_tokens stay visible through the window; causal
  // still applies. A row at position p sees key j iff (!causal or j <= p) and (window == 0 or
  // j > p − window or j < sink_tokens). 0 = none; else 0 < sink_tokens < window. With a ring
  // (kv_ring_rows > 0) keys j < sink_tokens sit in rows j, never evicted, and the ring is rows
  // [sink_tokens, kv_ring_rows): key j >= sink_tokens in row sink_tokens + (kv_first_row + j −
  // sink_tokens) mod (kv_ring_rows − sink_tokens).
  uint32_t sink_tokens = 0;
  // Positions a ring evicted between key sink_tokens − 1 and key sink_tokens: a sink key's
  // distance to a query is that much larger than their index difference (ALiBi reads it).
  uint32_t sink_gap = 0;
  // ALiBi (BLOOM, MPT, Falcon-RW): [n_heads] f32 slopes m_h, finite, or null (none). The logit of
  // query head h at position p for key j gains −m_h · |p − j| (p − j >= 0 on causal rows) after
  // scale and softcap, before the mask; sink keys count sink_gap more.
  const float* alibi_slopes = nullptr;
  // Prefix-LM (PaliGemma, T5-style prefixes): with causal, keys j < prefix are visible to every row
  // as well, so the causal bound of a row at position p is max(p, prefix − 1); the window and the
  // sink tokens bound from below as before. 0 = none; needs causal and prefix <= t_kv.
  uint32_t prefix = 0;
  // A symmetric window (ModernBERT's local layers, Longformer-style encoders): without causal, the
  // window also bounds from above, so a row at position p sees keys |p − j| < window. Needs a
  // window and no causal.
  bool window_symmetric = false;
  // A general mask (BERT's attention_mask made [t_q, t_kv], or any other pattern), broadcast over
  // heads and combined with everything above: entry [t][j] for query token t and key j sits at
  // t · mask_row_stride + j. mask_bool: one byte per entry, nonzero = visible (PyTorch's True =
  // attend). mask_additive: f32 added to the logit after scale, softcap and ALiBi; −inf hides the
  // key (+inf or NaN make the row NaN). At most one of the two; null = none. A key the mask hides
  // gets weight exactly 0 (its V enters as 0 · V, so a non-finite V under it makes the row NaN,
  // as in PyTorch's scaled_dot_product_attention); a row whose every key is hidden, by the mask
  // or the structured masks, gives zeros. Decode does not quantize the query under a mask (it can
  // leave a row a handful of keys, as ALiBi can).
  const uint8_t* mask_bool = nullptr;
  const float* mask_additive = nullptr;
  size_t mask_row_stride = 0;  // entries, >= t_kv

  // Testing and benchmarking only; production callers keep the defaults, and then the kernel is
  // a function of the shapes alone (see attention_kernel_name).
  AttentionTiling tiling = AttentionTiling::kAuto;
  bool generic_only = false;  // run the runtime-head_dim code even for head_dim 64 and 128
};

// nullptr when args describe a computation the kernels can run, else a message naming the field
// (e.g. "n_heads is not a multiple of n_kv_heads"). The kernels check the same conditions (plus
// their ranges and the scratch size) and write nothing when one fails: they never read or write
// out of the described buffers.
const char* attention_args_error(const AttentionArgs& args);

// Scratch (bytes) one call of attention_f32 needs; the caller passes at least this much,
// 64-byte aligned. Depends only on head_dim and the group size n_heads / n_kv_heads.
size_t attention_scratch_bytes(uint32_t head_dim, uint32_t group_size);

// Computes O for kv heads [kv_head_begin, kv_head_end) and query rows [q_begin, q_end) (all query
// heads of each group at once: each K/V tile is loaded once per group). Single-threaded.
// Nothing is written when args fail attention_args_error, a range is out of bounds, or
// scratch_bytes < attention_scratch_bytes. The result of a row does not depend on the ranges of
// the call, so any split of the ranges gives bitwise the same O.
void attention_f32(const AttentionArgs& args, uint32_t kv_head_begin, uint32_t kv_head_end, uint32_t q_begin,
                   uint32_t q_end, void* scratch, size_t scratch_bytes);

// Decode with few kv heads: split the keys of one kv head into chunks of `chunk` keys, compute
// each chunk's partial (running max m, sum l, unnormalized o) for every query row of the group,
// then merge the partials in chunk order. partial_* hold [n_chunks, t_q · group_size(, head_dim)].
// Row t · group_size + h is query token t, query head kv_head · group_size + h; chunk c covers keys
// [c · chunk, min((c + 1) · chunk, t_kv)). m is −inf, l and o are 0 for a row that sees no key of
// the chunk, except that chunk 0 starts each row from its sink when args.sinks is set (m = s_h,
// l = 1, o = 0 before its keys), so the merge counts the sink once. Partials of different chunks
// can be computed in any order or on any thread; the merge is deterministic. n_chunks =
// ceil(t_kv / chunk).
struct AttentionPartials {
  float* m = nullptr;
  float* l = nullptr;
  float* o = nullptr;
};
void attention_partial_f32(const AttentionArgs& args, uint32_t kv_head, uint32_t chunk_index, uint32_t chunk,
                           const AttentionPartials& partials, void* scratch, size_t scratch_bytes);
void attention_merge_f32(const AttentionArgs& args, uint32_t kv_head, uint32_t n_chunks,
                         const AttentionPartials& partials);

// The same three computations with no check at all, for a caller that checked once what the
// functions above check on every call: attention_args_error(args) is null, the ranges are within
// args, partials point at [n_chunks, t_q · group_size(, head_dim)] floats, and scratch holds
// attention_scratch_bytes(head_dim, group_size), 64-byte aligned. The CPU driver validates a call
// when it prepares it (runtime/attention/attention_run.hpp) and runs its tasks through these.
void attention_f32_unchecked(const AttentionArgs& args, uint32_t kv_head_begin, uint32_t kv_head_end, uint32_t q_begin,
                             uint32_t q_end, void* scratch);
void attention_partial_f32_unchecked(const AttentionArgs& args, uint32_t kv_head, uint32_t chunk_index, uint32_t chunk,
                                     const AttentionPartials& partials, void* scratch);
void attention_merge_f32_unchecked(const AttentionArgs& args, uint32_t kv_head, uint32_t n_chunks,
                                   const AttentionPartials& partials);

// The Highway target that attention_f32 dispatches to on this machine (e.g. "AVX3").
const char* attention_target_name();

// y[i] = exp(x[i]) as the kernels' softmax computes it, for x[i] <= 0 (a score minus its row's
// maximum): within 2 ulp where exp(x) >= 2^-125 (x >= -86.5), 0 below and at -inf, NaN for NaN.
// For tests; the dispatched target's code.
void softmax_exp(const float* x, float* y, size_t n);

// y[i] = the f16 value with bits x[i], widened as the kernels read f16 K/V and weights
// (kv_load-inl.h): exact for every input (subnormals, infinities; a NaN stays a NaN). For tests
// (Helium converts with a hand-encoded instruction, simd/helium.h); the dispatched target's code.
void widen_f16(const uint16_t* x, float* y, size_t n);

// The kernel attention_f32 runs for args: "<tiling>_<head_dim>", tiling "prefill" or "decode",
// head_dim "d64", "d128" (compile-time specialized) or "generic".
const char* attention_kernel_name(const AttentionArgs& args);

// Whether attention_f32 with args, on the dispatched target, quantizes the query to int8 per block
// of 32 for integer Q·Kᵀ (attention_decode_int8-inl.h): decode tiling, q8_0 or q4_0 K, head_dim
// a multiple of 32 and at least 64, no ALiBi, every query row seeing at least 64 keys, a target
// and CPU with integer dot products (AVX3_DL; AVX2 with AVX-VNNI; AArch64 with SDOT). Its scores
// then carry the query's rounding (docs/attention.md, Accuracy) instead of matching the widened f32
// arithmetic.
bool attention_decode_quantizes_query(const AttentionArgs& args);

// Bit mask (Highway HWY_* target bits) of the targets the kernels were compiled for; tests loop
// over SupportedTargets() & this mask.
int64_t attention_compiled_targets();

// Bit mask of the targets this CPU supports (Highway's HWY_SUPPORTED_TARGETS: a constant where
// one target is compiled, as on bare metal).
int64_t cpu_supported_targets();

// The names of the targets in bits, best first, separated by spaces ("AVX2 SSE4 SSE2"), into out
// (n bytes, always terminated; cut at a whole name where it does not fit). For reports.
void target_names(int64_t bits, char* out, size_t n);

}  // namespace simd
}  // namespace headway
