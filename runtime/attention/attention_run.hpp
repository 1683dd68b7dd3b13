// The threaded attention driver over the kernels' strided description (simd::AttentionArgs):
// what attend() and AttentionOp run on dense tensors and what the KV cache calls with its own
// layout (a ring of rows for sliding windows, [n_kv_heads, rows, head_dim] blocks). The work split
// and the workspace layout are the policy's (headway/detail/attention_policy.hpp): a pure function of
// the shape, never of the thread count, so every pool size gives bitwise the same O.
//
// A call is checked once, when it is prepared (prepare_attention: shapes, strides, pointers,
// parameters, threads); running it checks only the workspace, and the kernels' tasks check
// nothing (simd::attention_*_unchecked). A KV cache's attention, whose arguments the cache builds
// from its own rows, runs unchecked (attend_strided_unchecked) after the cache's own checks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/attention.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "simd/attention/attention.h"

namespace headway {

// Checks shapes, strides, pointers and parameters (scale 0 means 1/sqrt(head_dim)); the message
// names the field and the value.
Status validate_attention_args(const simd::AttentionArgs& args);

// Null, or n_heads finite sink logits ("attention: sinks[h] = v is not finite"): part of
// validate_attention_args, and the GPU backend's check of the same argument.
Status check_sink_logits(const float* sinks, uint32_t n_heads);
// Each of n_heads ALiBi slopes is finite (null: none), with attention's message.
Status check_alibi_slopes(const float* slopes, uint32_t n_heads);

// AttentionParams' packed batch (cu_seqlens_q, cu_seqlens_k, n_seqs) against the shape: none, or
// lengths that start at 0, rise strictly and end at t_q (t_kv); the message names the array, the
// index and the value. Part of AttentionOp::reshape and run, and the GPU backend's check.
Status check_packed_batch(const AttentionShape& shape, const AttentionParams& params);

// The split for valid args and `threads` threads (>= 1).
AttentionSplit attention_split(const simd::AttentionArgs& args, uint32_t threads);

// A call that passed every check but the workspace's: args with the scale resolved, the split
// for `threads` threads.
struct PreparedAttention {
  simd::AttentionArgs args;
  AttentionSplit split;
  uint32_t threads = 1;
};

// Checks args (validate_attention_args) and threads (1..ThreadPool::kMaxThreads), resolves the
// default scale and computes the split.
Result<PreparedAttention> prepare_attention(const simd::AttentionArgs& args, uint32_t threads);

// Runs a prepared call on `pool` (null: the caller's thread), whose thread count must be the
// prepared one. The workspace must be 64-byte aligned and hold split.workspace_bytes. Allocates
// nothing; checks the workspace and the pool's thread count, nothing else.
Status run_prepared_attention(const PreparedAttention& call, ThreadPool* pool, void* workspace, size_t workspace_bytes);

// The arguments for Q and O token-major [t_q, n_heads, head_dim] and K/V whose kv head g, row j
// starts g · kv_head_stride + j · kv_row_stride elements in: attend()'s token-major tensors
// (head_dim, n_kv_heads · head_dim) or a block per kv head as a KV cache holds them
// (rows · head_dim, head_dim). An error for a kv_dtype other than f32, f16, bf16; the rest is
// checked by attend_strided.
Result<simd::AttentionArgs> strided_attention_args(const float* q, const void* k, const void* v, DType kv_dtype,
                                                   float* o, const AttentionShape& shape, const AttentionParams& params,
                                                   size_t kv_head_stride, size_t kv_row_stride);

// prepare_attention, then run_prepared_attention with threads = pool's thread count or 1.
Status attend_strided(const simd::AttentionArgs& args, ThreadPool* pool, void* workspace, size_t workspace_bytes);
// attend_strided for args the caller built from what it had checked already (a KV cache's own
// rows, queries whose call passed the cache's checks): nothing is checked in a release build;
// a debug build checks it all (runtime/core/debug_check.hpp).
void attend_strided_unchecked(const simd::AttentionArgs& args, ThreadPool* pool, void* workspace,
                              size_t workspace_bytes);

}  // namespace headway
