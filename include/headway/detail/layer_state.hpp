// AttentionLayer's state, apart from its public header: what a layer holds by value (its
// backends, weights and XNNPACK operators) so that a Session's or a Model's layers live inside
// one object, with no heap. Users never name it; its layout may change between versions.
#pragma once

#include <cstdint>

#include "headway/arena.hpp"
#include "headway/backend.hpp"
#include "headway/plan.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

class AttentionLayer;

namespace detail {

struct AttentionLayerState {
  // The plan the layer runs on once init succeeded: layer_plan (its kind, its head shape) as its
  // backend holds it, its kv_owner's (a layer that shares KV rotates and attends as its owner
  // does), or the arena's (a linear layer). The Arena and the owner must outlive the layer.
  const Plan* plan = nullptr;
  const Arena* arena = nullptr;
  uint32_t layer = 0;
  ThreadPool* pool = nullptr;
  const float* sinks = nullptr;  // [n_heads] f32 in the arena's sinks region (null without sinks)
  CpuBackend cpu;
  GpuBackend gpu;
  bool on_gpu = false;
  AttentionLayer* kv_owner = nullptr;  // a layer that shares KV: the layer whose cache it reads
  LayerWeights w;                      // what the projections read: arena copies or the borrowed tensors
  bool fused_qkv = false;              // w.wq is the stacked [qkv_width, d_model] matrix (w.bq likewise)
  // XNNPACK operators: [Q, K, V, O] × blocks over output rows (kXnnMaxBlocks at most).
  void* ops[4][kXnnMaxBlocks] = {};
  uint32_t op_blocks = 0;
  uint64_t packed_used = 0;
  // A Gated DeltaNet layer (LayerKinds::linear): the CPU always, no backend; its position, its
  // state and window in the arena, its f32 vectors in its weights slot.
  bool linear = false;
  uint32_t linear_position = 0;
  float* delta_state = nullptr;
  const float* delta_vectors = nullptr;
};

}  // namespace detail
}  // namespace headway
