// The threaded attention driver over the kernels' strided description (simd::AttentionArgs):
// what attend() runs on dense tensors and what the KV cache calls with its own layout (a ring
// of rows for sliding windows, [n_kv_heads, rows, head_dim] blocks).
//
// Work split, a pure function of the shape (never of the thread count, so every pool size gives
// bitwise the same O):
//   - tiles: one task per (kv head, tile of query tokens); a tile holds kAttnQueryRows query
//     rows (tokens × the group's heads), at least one token.
//   - split-KV decode: when there are few such tasks (few kv heads, few query rows) and many
//     keys, one task per (kv head, chunk of keys: attention_kv_chunk) writes a partial softmax; a
//     second pass merges each kv head's partials in chunk order.
//
// Workspace layout (every region starts on a 64-byte boundary):
//   [threads × per-thread kernel scratch]
//   [split-KV only: n_kv_heads × (m [n_chunks, rows] f32, l [n_chunks, rows] f32,
//                                 o [n_chunks, rows, head_dim] f32)], rows = t_q · group
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/attention.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "simd/attention.h"

namespace headway {

// attention_kv_chunk, kAttnSplitMinTasks, kAttnSplitMaxRows: headway/plan.hpp (the plan sizes the
// partials from them).

// How attention over `args` is cut into tasks; see the header comment.
struct AttentionSplit {
  uint32_t group = 0;          // query heads per kv head
  uint32_t q_tile = 0;         // query tokens per tile task
  uint32_t q_tiles = 0;        // tiles per kv head
  uint32_t chunk = 0;          // split-KV keys per chunk
  uint32_t n_chunks = 0;       // split-KV chunks per kv head; 0 = tiles only
  size_t scratch_bytes = 0;    // per thread, a multiple of 64
  size_t partials_bytes = 0;   // per kv head (m, l, o), a multiple of 64
  size_t workspace_bytes = 0;  // for the thread count asked
};

// Checks shapes, strides, pointers and parameters (scale 0 means 1/sqrt(head_dim)); the message
// names the field and the value.
Status validate_attention_args(const simd::AttentionArgs& args);

// The split for valid args and `threads` threads (>= 1).
AttentionSplit attention_split(const simd::AttentionArgs& args, uint32_t threads);

// The arguments for Q and O token-major [t_q, n_heads, head_dim] and K/V whose kv head g, row j
// starts g · kv_head_stride + j · kv_row_stride elements in: attend()'s token-major tensors
// (head_dim, n_kv_heads · head_dim) or a block per kv head as a KV cache holds them
// (rows · head_dim, head_dim). An error for a kv_dtype other than f32, f16, bf16; the rest is
// checked by attend_strided.
Result<simd::AttentionArgs> strided_attention_args(const float* q, const void* k, const void* v, DType kv_dtype,
                                                   float* o, const AttentionShape& shape, const AttentionParams& params,
                                                   size_t kv_head_stride, size_t kv_row_stride);

// Runs attention over args on `pool` (null: the caller's thread). The workspace must be 64-byte
// aligned and hold attention_split(args, threads).workspace_bytes, threads = pool's thread
// count or 1. Allocates nothing.
Status attend_strided(const simd::AttentionArgs& args, ThreadPool* pool, void* workspace,
                      size_t workspace_bytes);

}  // namespace headway
