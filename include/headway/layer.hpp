// AttentionLayer: one transformer attention block over its regions of an Arena.
//
//   x [t, d_model] f32 ─▶ QKV = x·[Wq;Wk;Wv]ᵀ (+ bq, bk, bv)        fused row [q_width + 2·kv_width]
//                       ─▶ per-head RMS norm of q and k (qk_norm)  weight [head_dim], eps from config
//                       ─▶ RoPE on q (here) at the positions the cache holds next, and on k
//                          where it enters the cache (KvCache::append), both once, at the
//                          tokens' absolute positions, from the layer's table made at init
//                       ─▶ K, V appended to the layer's KvCache ─▶ attention (KvCache::attend)
//                       ─▶ y = O·Woᵀ (+ bo)                         y [t, d_model] f32
//
// Weights: with plan.options.weights_in_arena they are copied at init into the layer's slice of
// the arena's weights region, converted to plan.options.weight_dtype, Wq, Wk, Wv stacked into one
// [qkv_width, d_model] matrix (one projection call per token block). Otherwise they are borrowed:
// the TensorRefs must stay valid (a memory-mapped file) for the layer's lifetime, in any of f32,
// f16, bf16; Q, K and V are then three projection calls into the same fused row.
//
// Projections run on the plan's projection engine (PlanOptions::projection): the Highway GEMM /
// GEMV (simd/matmul.h, always built) or XNNPACK fully-connected operators (HEADWAY_XNNPACK builds),
// created once at init with their packed weights carved from the arena's packed region (Q, K
// and V are three operators writing into the fused row; the caller's tensors are not read after
// init, whatever weights_in_arena says).
//
// forward() never allocates. A call with bad arguments or past the context changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/arena.hpp"
#include "headway/kv_cache.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

// Checks that `w` has every tensor `plan.config` asks for, with the right shape and a supported
// dtype. The message names the tensor, its shape and the one expected.
Status check_layer_weights(const Plan& plan, const LayerWeights& w, uint32_t layer);

class AttentionLayer {
 public:
  AttentionLayer() = default;
  ~AttentionLayer();
  AttentionLayer(const AttentionLayer&) = delete;
  AttentionLayer& operator=(const AttentionLayer&) = delete;

  // Binds layer `layer` (0..n_layers-1) of `arena`'s plan: its KV region, its weights slice (or
  // the borrowed weights), the shared activation and scratch regions. `pool` may be null (one
  // thread); otherwise it must have at most plan.options.threads threads and outlive the layer.
  // The Arena object and its buffer must outlive the layer.
  // Init-time only: may allocate (XNNPACK operator creation with f16/bf16 sources widens one
  // matrix at a time through a temporary f32 buffer).
  Status init(const Arena& arena, uint32_t layer, const LayerWeights& weights, ThreadPool* pool = nullptr);

  // Runs t tokens (1..plan.max_tokens) at positions position()..position()+t-1: x [t, d_model]
  // f32 row-major into y [t, d_model]. x and y may be the same buffer. Past the context
  // (position() + t > max_seq): kOutOfRange and nothing changed.
  Status forward(const float* x, float* y, uint32_t t);

  // Empties the cache; the next token sits at `start_position` (a fresh cache that starts
  // mid-sequence: positions start_position.. get their RoPE angles; start_position + tokens must
  // stay within max_seq). Attention only sees the tokens run since the reset.
  void reset(uint32_t start_position = 0);

  uint32_t position() const { return cache_.position(); }  // the next token's, as the cache holds it
  uint32_t start_position() const { return cache_.start_position(); }
  const KvCache& cache() const { return cache_; }
  bool initialized() const { return plan_ != nullptr; }

  // Bytes of the arena's packed region this layer's XNNPACK operators took (0 for Highway);
  // at most plan.packed_bytes_per_layer.
  uint64_t packed_bytes_used() const { return packed_used_; }

 private:
  Status project(uint32_t which, const float* x, float* y, uint32_t t);

  const Plan* plan_ = nullptr;  // the arena's plan: the Arena must outlive the layer
  const Arena* arena_ = nullptr;
  uint32_t layer_ = 0;
  ThreadPool* pool_ = nullptr;
  const double* rope_ = nullptr;  // the layer's RoPE table in the arena (null without RoPE)
  KvCache cache_;
  LayerWeights w_;  // what the projections read: arena copies or the borrowed tensors
  bool fused_qkv_ = false;  // w_.wq is the stacked [qkv_width, d_model] matrix (w_.bq likewise)
  // XNNPACK operators: [Q, K, V, O] × blocks over output rows (kXnnMaxBlocks at most).
  void* ops_[4][kXnnMaxBlocks] = {};
  uint32_t op_blocks_ = 0;
  uint64_t packed_used_ = 0;
};

}  // namespace headway
