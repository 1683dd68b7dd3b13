// AttentionLayer: one transformer attention block over its regions of an Arena.
//
//   x [t, d_model] f32 ─▶ QKV = x·[Wq;Wk;Wv]ᵀ (+ bq, bk, bv)        fused row [q_rows + 2·kv_width]
//                          (Config::output_gate: Wq gives each head's query and gate, split
//                          into [queries | gates] before anything else reads the row)
//                       ─▶ per-head RMS norm of q and k (qk_norm)  weight [head_dim], eps from config
//                       ─▶ RoPE on q (here) at the positions the backend holds next, and on
//                          k where it enters the cache (the backend's append), both once, at
//                          the tokens' absolute positions, from tables made at init
//                       ─▶ K, V appended to the layer's backend ─▶ attention (its attend),
//                          with the layer's learned sink logits when Config::sinks
//                       ─▶ O · sigmoid(gates) (Config::output_gate)
//                       ─▶ y = O·Woᵀ (+ bo)                         y [t, d_model] f32
//
// Weights: with plan.options.weights_in_arena they are copied at init into the layer's slice of
// the arena's weights region, converted to plan.options.weight_dtype, Wq, Wk, Wv stacked into one
// [qkv_width, d_model] matrix (one projection call per token block). Otherwise they are borrowed:
// the TensorRefs must stay valid (a memory-mapped file) for the layer's lifetime, in any of f32,
// f16, bf16; Q, K and V are then three projection calls into the same fused row. The sink logits
// (Config::sinks) are converted at init to f32 in the layer's slice of the arena's sinks region,
// in every mode.
//
// Projections run on the plan's projection engine (PlanOptions::projection): the Highway GEMM /
// GEMV (simd/matmul/matmul.h, always built) or XNNPACK fully-connected operators (HEADWAY_XNNPACK builds),
// created once at init with their packed weights carved from the arena's packed region (Q, K
// and V are three operators writing into the fused row; the caller's tensors are not read after
// init, whatever weights_in_arena says).
//
// The KV cache and attention run on the backend LayerOptions names (headway/backend.hpp): the
// CPU (a CpuBackend over the layer's KV region, its RoPE table and the arena's scratch) or a
// Vulkan device (a GpuBackend made at init on the caller's GpuContext; the arena's KV region of
// the layer is then unused). The backend owns the tokens' positions; the layer keeps none.
//
// forward() never allocates (on either backend). A call with bad arguments or past the context
// changes nothing. A layer belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/detail/layer_state.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

class AttentionLayer;

// Checks that `w` has every tensor `plan.config` asks for, with the right shape and a supported
// dtype, and that its sink logits (Config::sinks) are finite. The message names the layer, the
// tensor, its shape and the one expected (or the head and the value).
Status check_layer_weights(const Plan& plan, const LayerWeights& w, uint32_t layer);

// How a layer (or each layer of a Session) runs.
struct LayerOptions {
  // Projections (and CPU attention); null: the caller's thread. At most plan.options.threads
  // threads; it must outlive the layer.
  ThreadPool* pool = nullptr;
  // Where the KV cache and attention run: BackendKind::kCpu, or kGpu on `gpu`.
  BackendKind backend = BackendKind::kCpu;
  GpuContext* gpu = nullptr;  // kGpu: a created GpuContext that outlives the layer
  // A layer that shares KV (Plan::layer(i).shares_kv, Gemma 3n / 4): the initialized layer of the
  // same arena whose cache it reads (Plan::layer(i).kv_owner); it must outlive this one. Ignored
  // by the other layers.
  AttentionLayer* kv_owner = nullptr;
};

class AttentionLayer {
 public:
  AttentionLayer() = default;
  ~AttentionLayer();
  AttentionLayer(const AttentionLayer&) = delete;
  AttentionLayer& operator=(const AttentionLayer&) = delete;

  // Binds layer `layer` (0..n_layers-1) of `arena`'s plan, run as its kind says (layer_plan: its
  // window, its RoPE or none and base, its KV rows): its KV region (CPU backend) and RoPE table, its weights slice (or
  // the borrowed weights), the shared activation and scratch regions; makes the backend options.backend names.
  // options.pool may be null (one thread); otherwise it must have at most plan.options.threads threads and outlive the
  // layer. The Arena object and its buffer must outlive the layer. A failed init leaves the layer uninitialized; a
  // failed weight check (check_layer_weights: shapes, dtypes, finite sink logits) writes nothing to the arena.
  // Init-time only: may allocate (XNNPACK operator creation with f16/bf16 sources widens one matrix at a time through a
  // temporary f32 buffer; the GPU backend's device state).
  Status init(const Arena& arena, uint32_t layer, const LayerWeights& weights, const LayerOptions& options);
  // The same on the CPU backend.
  Status init(const Arena& arena, uint32_t layer, const LayerWeights& weights, ThreadPool* pool = nullptr);

  // Runs t tokens (1..plan.max_tokens) at positions position()..position()+t-1: x [t, d_model]
  // f32 row-major into y [t, d_model]. x and y may be the same buffer. Past the context
  // (position() + t > max_seq): kOutOfRange and nothing changed. A layer that shares KV appends
  // nothing: its t queries are the last t tokens its kv_owner ran (positions position()-t..
  // position()-1), so the owner runs each call's tokens first.
  Status forward(const float* x, float* y, uint32_t t);
  // A packed batch of n_seqs independent sequences (an encoder's sentences), back to back in x
  // and y: cu_seqlens [n_seqs + 1] cumulative lengths (0, rising strictly, ending at the total t,
  // 1..max_tokens). The projections run once over all t tokens; each sequence then starts a
  // fresh cache at position 0 (its RoPE positions, its mask) and attends only within itself, so
  // its rows are what forward() gives it alone after reset(0). The cache is empty afterwards
  // (reset(0)). Bad lengths change nothing.
  Status forward_packed(const float* x, float* y, const uint32_t* cu_seqlens, uint32_t n_seqs);
  // forward_packed's checks of the lengths alone (Session::encode makes them before it writes).
  Status check_packed(const uint32_t* cu_seqlens, uint32_t n_seqs) const;

  // Empties the cache (a layer that shares KV: nothing; its owner's reset empties the cache it
  // reads); the next token sits at `start_position` (a fresh cache that starts
  // mid-sequence: positions start_position.. get their RoPE angles; start_position + tokens must
  // stay within max_seq). Attention only sees the tokens run since the reset.
  void reset(uint32_t start_position = 0);

  // The next token's position, as the backend holds it.
  uint32_t position() const {
    if (s_.kv_owner != nullptr) return s_.kv_owner->position();
    return s_.linear ? s_.linear_position : s_.on_gpu ? s_.gpu.position() : s_.cpu.position();
  }
  // The layer's KV cache on the CPU backend (its rows in the arena), for saving and restoring a
  // model's state; null on the GPU backend (its rows live on the device), on a linear layer (it
  // has a state instead: linear_state()), on a layer that shares KV (it has none) or before init.
  KvCache* cpu_cache() { return has_cpu_cache() ? &s_.cpu.cache() : nullptr; }
  const KvCache* cpu_cache() const { return has_cpu_cache() ? &s_.cpu.cache() : nullptr; }
  // Whether it reads another layer's cache (LayerOptions::kv_owner) and has none of its own.
  bool shares_kv() const { return s_.kv_owner != nullptr; }
  // A Gated DeltaNet layer's state and convolution window (plan.linear_state_bytes_per_layer
  // bytes in the arena); null on an attention layer.
  float* linear_state() const { return s_.linear ? s_.delta_state : nullptr; }
  bool is_linear() const { return s_.linear; }
  // After a state's bytes were written to linear_state(): the layer goes on from `position`.
  void restore_linear(uint32_t position) { s_.linear_position = position; }
  BackendKind backend_kind() const { return s_.on_gpu ? BackendKind::kGpu : BackendKind::kCpu; }
  const char* backend_description() const {
    if (s_.kv_owner != nullptr) return s_.kv_owner->backend_description();
    return s_.linear ? "cpu (Gated DeltaNet)" : s_.on_gpu ? s_.gpu.description() : s_.cpu.description();
  }
  bool initialized() const { return s_.plan != nullptr; }

  // Bytes of the arena's packed region this layer's XNNPACK operators took (0 for Highway);
  // at most plan.packed_bytes_per_layer.
  uint64_t packed_bytes_used() const { return s_.packed_used; }

 private:
  friend class Session;  // forward_unchecked
  friend class Model;
  // forward()'s checks alone (init, t, x and y, the context, an owner that ran these tokens).
  Status check_forward(const float* x, const float* y, uint32_t t) const;
  // forward() for a caller that has checked the whole call once (Session, Model: the context and
  // each chunk's length, the layers in order): the backend's unchecked append, rotation and
  // attention follow. A release build checks nothing; a debug build runs check_forward and stops
  // the process where it fails. Errors left: the device's (GPU) and XNNPACK's.
  Status forward_unchecked(const float* x, float* y, uint32_t t);
  Status project(uint32_t which, const float* x, float* y, uint32_t t);
  Status project_qkv(const float* x, uint32_t t);
  void split_gates(float* qkv, uint32_t t) const;
  void init_mla_weights(const LayerWeights& weights);  // runtime/model/mla_layer.cc
  Status forward_mla(const float* x, float* y, uint32_t t);
  void apply_gates(const float* qkv, float* attn, uint32_t t) const;
  void init_gated_delta(const LayerWeights& weights);  // runtime/model/gated_delta_layer.cc
  Status forward_gated_delta(const float* x, float* y, uint32_t t);
  void reset_gated_delta(uint32_t start_position);
  Status init_backend(const Plan& own, uint32_t layer, const LayerOptions& options);
  Status init_kv_owner(uint32_t layer, const LayerOptions& options);
  // The backend that holds the cache this layer reads: its own, or its kv_owner's.
  Backend backend() {
    if (s_.kv_owner != nullptr) return s_.kv_owner->backend();
    return s_.on_gpu ? Backend(&s_.gpu) : Backend(&s_.cpu);
  }
  bool has_cpu_cache() const { return !s_.on_gpu && !s_.linear && s_.kv_owner == nullptr && s_.plan != nullptr; }

  // Its state (plan, backends, weights, XNNPACK operators, a linear layer's state), held by value
  // so that a Session's layers live in one object with no heap: headway/detail/layer_state.hpp.
  detail::AttentionLayerState s_;
};

}  // namespace headway
