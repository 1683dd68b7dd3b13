// attend(): attention over raw tensors, the entry point for callers that hold their own Q, K, V
// (the `headway attend` tool, tests, a runtime that is not a Session).
//
//   Q [t_q, n_heads, head_dim] f32, K and V [t_kv, n_kv_heads, head_dim] in kv_dtype (f32, or f16
//   / bf16 bit patterns, or q8_0 / q4_0: each row of head_dim values quantized on its own,
//   dtype_row_bytes(kv_dtype, head_dim) bytes, as quantize_row writes it), O [t_q, n_heads,
//   head_dim] f32; all row-major and dense.
//   O = softmax(scale · Q Kᵀ + mask) V in f32. causal is bottom-right aligned: query i sees key
//   j iff j <= i + (t_kv − t_q); window W > 0 additionally requires j > i + (t_kv − t_q) − W;
//   softcap c > 0 applies c · tanh(logit / c) to the scaled logit. GQA: query head h reads kv
//   head h / (n_heads / n_kv_heads). Sink tokens keep the first keys visible through the window;
//   ALiBi adds −m_h · |p − j|; a prefix opens the first keys to every causal row; a packed batch
//   keeps sequences apart, and a general mask (bool or additive) hides keys or shifts logits
//   (AttentionParams). A query row that sees no key gets zeros.
//   NaN / Inf in Q, K or V are data, not errors: they reach the output rows whose computation
//   reads them with the value IEEE arithmetic gives (a NaN query row or a NaN key a row sees
//   makes that row NaN), and no other row, which is bitwise what it is without them. NaN / Inf
//   in scale or softcap are errors.
//
// Memory: the caller passes a workspace of attention_workspace_bytes() bytes, 64-byte aligned;
// attend() allocates nothing. AttentionOp is the same computation with XNNPACK's lifecycle:
// reshape() checks a shape once and sizes its workspace, run() takes the tensors. Threads: work is cut into tasks by
// the shapes alone, so the result is bitwise identical for any pool size, and for no pool at all.
// attend() is reentrant: concurrent calls need their own workspaces (they may share a pool); an
// AttentionOp belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/detail/attention_policy.hpp"
#include "headway/config.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway {

struct AttentionShape {
  uint32_t t_q = 0;         // query tokens
  uint32_t t_kv = 0;        // keys (and values)
  uint32_t n_heads = 0;     // query heads
  uint32_t n_kv_heads = 0;  // key/value heads; divides n_heads
  uint32_t head_dim = 0;    // 1..kMaxHeadDim
};

struct AttentionParams {
  float scale = 0.0f;    // logit scale; 0 = 1/sqrt(head_dim)
  float softcap = 0.0f;  // 0 = off
  bool causal = false;
  uint32_t window = 0;  // 0 = no sliding window; larger than t_kv is allowed (no effect)
  // Learned sink logits (gpt-oss): n_heads finite floats, or null (none). Sink s_h joins the
  // softmax of every row of query head h as one more logit with no value, after scale, softcap and
  // mask: o = Σ_j e^{l_j − m} v_j / (Σ_j e^{l_j − m} + e^{s_h − m}), m = max(max_j l_j, s_h); a
  // row that sees no key is 0. AttentionOp checks the values at reshape() and reads the array at
  // each run(): it must outlive the op. The GPU backend takes them too (attend_dense).
  const float* sinks = nullptr;
  // Sink tokens (StreamingLLM): with a window W, keys j < sink_tokens stay visible to every row
  // (causal still applies): query i at position p sees key j iff j <= p (causal) and (j > p − W
  // or j < sink_tokens). 0 = none; needs a window larger than it.
  uint32_t sink_tokens = 0;
  // ALiBi (BLOOM, MPT, Falcon-RW): n_heads finite slopes m_h (alibi_slopes() gives the standard
  // ones), or null. The logit of query head h at position p for key j gains −m_h · |p − j| after
  // scale and softcap (on causal rows p − j >= 0). Read at each run(), like sinks.
  const float* alibi_slopes = nullptr;
  // Prefix-LM (PaliGemma, T5-style prefixes): with causal, every row also sees keys j < prefix:
  // bidirectional over the first `prefix` keys, causal after (a row at position p sees j <=
  // max(p, prefix − 1); a window and sink tokens bound from below as before). In a packed batch it
  // counts from each sequence's start. 0 = none; needs causal and at most t_kv keys (in a packed
  // batch, at most each sequence's).
  uint32_t prefix = 0;
  // A symmetric sliding window (ModernBERT's local layers): without causal, a row at position p
  // sees keys |p − j| < window (the window bounds from above too). Needs a window and no causal.
  bool window_symmetric = false;
  // A packed batch (FlashAttention's varlen layout): n_seqs sequences back to back in Q and O and
  // in K and V, each attending only within itself. cu_seqlens_q [n_seqs + 1] holds cumulative
  // query lengths: sequence b's queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] − 1; it
  // starts at 0, rises strictly (no empty sequence) and ends at t_q. cu_seqlens_k is the same over
  // the t_kv keys, or null: the queries' (then t_kv == t_q). Within a sequence everything is as
  // in a call of its own (causal is bottom-right aligned to its lengths; window, sink tokens and
  // ALiBi count positions from its start), and its O rows are bitwise what that call gives. No
  // padding is computed and no score matrix is made. null (n_seqs 0) = one sequence. Checked at
  // reshape() and again at each run(), which reads the arrays: they must outlive the op.
  const uint32_t* cu_seqlens_q = nullptr;
  const uint32_t* cu_seqlens_k = nullptr;
  uint32_t n_seqs = 0;
  // A general mask [t_q, t_kv] (a BERT attention_mask broadcast to rows, a document mask, any
  // pattern), broadcast over heads and combined with every mask above: entry [i][j] for query row
  // i and key j of the whole call sits at i · mask_row_stride + j (0 = t_kv). In a packed batch a
  // sequence reads its own block on the diagonal; entries off it are never read. mask_bool: one
  // byte per entry, nonzero = visible (PyTorch's True = attend). mask_additive: f32 added to the
  // logit after scale, softcap and ALiBi, −inf hides the key (finite values or −inf; +inf or NaN
  // make the row NaN). At most one of the two. A key the mask hides gets weight exactly 0 (a
  // non-finite V under it still makes the row NaN, as 0 · V does in PyTorch); a row whose every
  // key is hidden gives zeros. Read at each run(), like sinks; the GPU backend takes it too (made
  // with dense_masks).
  const uint8_t* mask_bool = nullptr;
  const float* mask_additive = nullptr;
  size_t mask_row_stride = 0;
};

// The standard ALiBi slopes of n_heads heads (Press et al.; BLOOM's build_alibi_tensor): for a
// power of two n, m_h = 2^(−8(h+1)/n); otherwise the n0 = 2^floor(log2 n) slopes of n0 heads, then
// 2^(−4(2i+1)/n0) for i = 0.. (the odd ones of 2·n0 heads) for the n − n0 heads left. With
// `max_bias` b in place of 8 (MPT's alibi_bias_max): 2^(−b(h+1)/n) and 2^(−b(2i+1)/(2·n0)).
// Writes n_heads floats; n_heads 1..kMaxHeads, max_bias finite > 0, else an error and nothing
// written.
Status alibi_slopes(uint32_t n_heads, float* slopes, float max_bias = 8.0f);

inline constexpr size_t kWorkspaceAlignment = kAlignment;

// Bytes of workspace attend() needs for this shape with a pool of `threads` threads (pass
// pool->threads(), or 1 without a pool). Fails on an invalid shape, with the same message as
// attend().
Result<size_t> attention_workspace_bytes(const AttentionShape& shape, uint32_t threads);
// The same for a call with these parameters: a packed batch (cu_seqlens_q) needs the most that
// one of its sequences needs, which can be more than the whole shape's.
Result<size_t> attention_workspace_bytes(const AttentionShape& shape, const AttentionParams& params, uint32_t threads);

// Computes O. `pool` may be null (the caller's thread does all the work). Errors: kInvalidArgument
// for a bad shape, parameter, pointer or a workspace that is too small or misaligned.
Status attend(const float* q, const void* k, const void* v, DType kv_dtype, float* o, const AttentionShape& shape,
              const AttentionParams& params, ThreadPool* pool, void* workspace, size_t workspace_bytes);

// attend() split in two, for a caller that runs one shape many times (or wants the shape checked
// before it has the tensors):
//
//   headway::AttentionOp op;
//   HEADWAY_RETURN_IF_ERROR(op.reshape(shape, params, DType::kF16, pool.threads()));  // checks, sizes
//   workspace = ... op.workspace_bytes() bytes, 64-byte aligned ...
//   HEADWAY_RETURN_IF_ERROR(op.run(q, k, v, o, &pool, workspace, op.workspace_bytes()));  // many times
//
// reshape() checks everything attend() checks but the tensors and the workspace, with the same
// messages; on error the op keeps its previous shape. run() checks only that the op has a shape,
// that no tensor is null, that the pool has the threads it was reshaped for, and the workspace;
// the kernels then run with no further checks. Neither allocates.
class AttentionOp {
 public:
  Status reshape(const AttentionShape& shape, const AttentionParams& params, DType kv_dtype, uint32_t threads);
  bool reshaped() const { return threads_ != 0; }
  const AttentionShape& shape() const { return shape_; }
  // Bytes of the workspace run() needs (0 before the first successful reshape).
  size_t workspace_bytes() const { return static_cast<size_t>(split_.workspace_bytes); }
  // How reshape() cut the work (tile tasks, split-KV chunks).
  const AttentionSplit& split() const { return split_; }

  // Tensors as attend() takes them; pool null runs on the caller (reshape with threads = 1).
  Status run(const float* q, const void* k, const void* v, float* o, ThreadPool* pool, void* workspace,
             size_t workspace_bytes) const;

 private:
  AttentionShape shape_{};
  AttentionParams params_{};  // scale resolved
  DType kv_dtype_ = DType::kF32;
  uint32_t threads_ = 0;  // 0: not reshaped
  AttentionSplit split_{};
};

}  // namespace headway
