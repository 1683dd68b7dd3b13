// KvCache: one layer's K and V over its region of the arena, in the plan's layout
//   K [n_kv_heads, cache_rows, head_dim] then V [n_kv_heads, cache_rows, head_dim], kv_dtype.
// The cache owns the tokens' positions: reset(start) empties it and puts the next token at
// position `start`; position() = start + size(). Rows count from the reset, not from position 0:
// the i-th token appended since the reset (position start + i) lives in row i (full attention)
// or row i mod cache_rows (sliding window: a ring). With sink tokens S (Config::sink_tokens) a
// ring keeps the first S tokens since the reset in rows 0..S−1 for good and cycles the others
// through the rows after them: token i >= S in row S + (i − S) mod (cache_rows − S).
// append() rotates K once, at its absolute position (the RoPE frequencies of the table given to
// bind), and converts to the storage dtype; attend() runs the queries of the tokens appended last
// against everything the cache holds. Nothing allocates. A KvCache belongs to one thread at a
// time (attend() may run its work on a pool).
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway {

class KvCache {
 public:
  // Binds a region of plan.kv_bytes_per_layer bytes (Arena::kv_layer(l)). rope_table: the
  // layer's RoPE table, rope_frequency_count() doubles (headway/plan.hpp) made by
  // make_rope_table(), borrowed for the cache's lifetime; may be null when the config has no
  // RoPE. alibi_slopes: plan.config.n_heads slopes made by make_alibi_slopes(), borrowed the same
  // way; may be null when the config has no ALiBi. The cache starts empty at position 0.
  Status bind(const Plan& plan, void* region, size_t bytes, const double* rope_table = nullptr,
              const float* alibi_slopes = nullptr);

  // Writes the RoPE table of `plan` (plan.rope_bytes_per_layer bytes, 8-byte aligned) to `table`.
  static void make_rope_table(const Plan& plan, double* table);
  // Writes the ALiBi slopes of `plan` (plan.alibi_bytes bytes, 4-byte aligned) to `slopes`.
  static void make_alibi_slopes(const Plan& plan, float* slopes);

  uint32_t size() const { return size_; }  // tokens appended since the reset
  uint32_t rows() const { return plan_.cache_rows; }
  const Plan& plan() const { return plan_; }  // the bound plan (a copy)
  uint32_t start_position() const { return start_; }
  uint32_t position() const { return start_ + size_; }  // the next token's position
  // Empties the cache; the next token sits at start_position (a fresh cache that starts
  // mid-sequence: its K get the RoPE angles of positions start_position..).
  void reset(uint32_t start_position = 0) {
    start_ = start_position;
    size_ = 0;
  }

  // Keeps the first `tokens` appended since the reset and drops the rest (a rollback: speculative or
  // assisted decoding, transformers' Cache.crop); nothing is moved or allocated, the next token goes
  // to position start_position() + tokens. A full-attention cache takes any tokens <= size(). A
  // sliding-window ring takes it while nothing a later query could see has been overwritten: always
  // before it wrapped (size() <= rows()); after, a causal window without sink tokens can drop at most
  // rows() − window + 1 tokens. Errors (the cache unchanged): tokens > size() (kOutOfRange), a ring
  // that no longer holds what the truncated cache would need (kFailedPrecondition, with the ring's
  // rows, window and how many tokens it can drop), before bind (kFailedPrecondition).
  Status truncate(uint32_t tokens);

  // A cache's contents as they sit, for saving and restoring it (Model::save_state, load_state):
  // kv head g's K (v false) or V rows, rows() rows of dtype_row_bytes(kv_dtype, head_dim) bytes
  // each (a ring's rows in ring order, not in token order); null before bind.
  uint8_t* head_rows(uint32_t g, bool v) const {
    if (k_ == nullptr) return nullptr;
    return (v ? v_ : k_) + size_t{g} * rows() * dtype_row_bytes(plan_.config.kv_dtype, plan_.head_dim);
  }
  // After rows written back through head_rows(): the cache holds `size` tokens appended since a
  // reset at start_position, in the rows append() would have put them. The caller has checked
  // start_position + size <= max_seq (nothing is checked here).
  void restore(uint32_t start_position, uint32_t size) {
    start_ = start_position;
    size_ = size;
  }

  // Appends n tokens at positions position()..position()+n-1. k and v are [n, n_kv_heads,
  // head_dim] f32, token t at k + t · k_token_stride (so they can point into a fused QKV row).
  // RoPE is applied to the stored K, not to the caller's buffer. On error (past the context, more tokens than a
  // window ring can take at once, bad arguments) the cache is exactly as it was.
  Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);

  // Attention for the queries of the last t_q appended tokens (positions position()-t_q..
  // position()-1), q [t_q, n_heads, head_dim] f32 with RoPE already applied at those positions,
  // into o.
  // Causality, window, sink tokens, ALiBi, softcap and scale come from the plan's config; sinks, when not null, are
  // n_heads learned sink logits (AttentionParams::sinks), checked on each call.
  Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q, ThreadPool* pool,
                void* workspace, size_t workspace_bytes, const float* sinks = nullptr) const;
  // Rotates q [t_q, n_heads, head_dim] f32 (token t at q + t · q_token_stride) in place as the
  // queries of the last t_q tokens appended (positions position() − t_q ..): the RoPE their keys
  // got, which attend() expects the queries to have. Without RoPE, q stays as it is. On error
  // (t_q 0 or past size(), before bind) q is unchanged.
  Status rotate_queries(float* q, size_t q_token_stride, uint32_t t_q) const;
  // Workspace attend() needs for t_q queries at the current size with `threads` threads.
  size_t workspace_bytes(uint32_t t_q, uint32_t threads) const;

 private:
  friend class CpuBackend;  // its *_unchecked calls
  // append(), attend() and rotate_queries() for a caller that has made their checks itself
  // (AttentionLayer through CpuBackend, after its own checks of the whole call): nothing is
  // checked in a release build, everything in a debug one, which stops the process at a call that
  // would have failed. The workspace is at least what workspace_bytes() asks for. A pool (or
  // null: the caller's thread) splits each call by tokens, which gives what one thread gives.
  void append_unchecked(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n,
                        ThreadPool* pool);
  void attend_unchecked(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                        ThreadPool* pool, void* workspace, size_t workspace_bytes, const float* sinks) const;
  void rotate_queries_unchecked(float* q, size_t q_token_stride, uint32_t t_q, ThreadPool* pool) const;
  // An append's tokens [first, end) of its call: K with RoPE (and the Hadamard rotation) and V into
  // their rows.
  struct AppendCall;
  static void append_task(void* ctx, size_t task);
  void append_tokens(const AppendCall& a, uint32_t first, uint32_t end);
  struct View;
  View view(uint32_t t_q) const;
  View call(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
            const float* sinks) const;
  // append's checks (bind, then check_kv_append); attend's of t_q against what the cache holds.
  Status check_append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n) const;
  Status check_queries(uint32_t t_q) const;
  void unrotate_output(float* o, size_t o_token_stride, uint32_t t_q) const;

  Plan plan_{};
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
  const double* rope_ = nullptr;
  const float* alibi_ = nullptr;
  uint32_t start_ = 0;
  uint32_t size_ = 0;
};

}  // namespace headway
