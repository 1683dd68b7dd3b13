// KvCache: one layer's K and V over its region of the arena, in the plan's layout
//   K [n_kv_heads, cache_rows, head_dim] then V [n_kv_heads, cache_rows, head_dim], kv_dtype.
// Position p lives in row p (full attention) or row p mod cache_rows (sliding window: a ring).
// append() applies RoPE to K and converts to the storage dtype; attend() runs the queries of the
// tokens appended last against everything the cache holds. Nothing allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"

namespace headway {

class KvCache {
 public:
  // Binds a region of plan.kv_bytes_per_layer bytes (Arena::kv_layer(l)). The cache starts empty.
  Status bind(const Plan& plan, void* region, size_t bytes);

  uint32_t size() const { return size_; }                  // tokens appended: positions 0..size-1
  uint32_t rows() const { return plan_.cache_rows; }
  void reset() { size_ = 0; }

  // Appends n tokens at positions size()..size()+n-1. k and v are [n, n_kv_heads, head_dim] f32,
  // token t at k + t · k_token_stride (so they can point into a fused QKV row). RoPE is applied
  // to the stored K, not to the caller's buffer. On error (past the context, more tokens than a
  // window ring can take at once, bad arguments) the cache is exactly as it was.
  Status append(const float* k, size_t k_token_stride, const float* v, size_t v_token_stride, uint32_t n);

  // Attention for the queries of the last t_q appended tokens (positions size()-t_q..size()-1),
  // q [t_q, n_heads, head_dim] f32 with RoPE already applied (apply_rope at size() - t_q), into o.
  // Causality, window, softcap and scale come from the plan's config.
  Status attend(const float* q, size_t q_token_stride, float* o, size_t o_token_stride, uint32_t t_q,
                ThreadPool* pool, void* workspace, size_t workspace_bytes) const;
  // Workspace attend() needs for t_q queries at the current size with `threads` threads.
  size_t workspace_bytes(uint32_t t_q, uint32_t threads) const;

 private:
  struct View;
  View view(uint32_t t_q) const;

  Plan plan_{};
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
  uint32_t size_ = 0;
};

}  // namespace headway
