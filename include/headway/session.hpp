// Session: a stack of n_layers attention blocks over one Arena, prefilled and decoded token by
// token. Blocks are joined by a residual add, as in a transformer without its MLPs and norms:
//
//   h_0 = x;   h_{l+1} = h_l + attn_l(h_l);   output y = h_n_layers
//
// (the residual keeps values bounded as depth grows, so a deep random stack stays meaningful).
// The residual stream h and each block's output live in the arena's activation region.
//
//   headway::Arena arena;  arena.bind(plan, buffer, plan.arena_bytes);
//   headway::Session s;    s.init(arena, layer_weights, plan.config.n_layers, &pool);
//   s.prefill(prompt, n_prompt, out);            // any n: cut into chunks of plan.max_tokens
//   s.decode(x, out);                            // one token
//
// prefill() of n tokens checks first that position() + n fits the context (max_seq); if not it
// returns kOutOfRange and no cache changes. Neither call allocates.
//
// Each layer's KV cache and attention run on the backend LayerOptions names: the CPU, or a
// Vulkan device through the caller's GpuContext (one GpuBackend per layer, made at init):
//   headway::GpuContext gpu;  gpu.create();
//   headway::LayerOptions o;  o.pool = &pool;  o.backend = headway::BackendKind::kGpu;  o.gpu = &gpu;
//   s.init(arena, layer_weights, plan.config.n_layers, o);
// The position is the layers' own (each layer's backend holds it); the Session keeps none.
// A Session (its layers, their caches and the arena's activations) belongs to one thread at a
// time; the pool runs its work. Two Sessions over two arenas run side by side.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/arena.hpp"
#include "headway/layer.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"
#include "headway/thread_pool.hpp"
#include "headway/weights.hpp"

namespace headway {

class Session {
 public:
  // The deepest stack a Session holds (its layer objects are members, not heap).
  static constexpr uint32_t kMaxLayers = 128;

  // The Arena (and its buffer) and the pool must outlive the session.
  // layers[0..n_layers-1]: each layer's weights (n_layers == plan.config.n_layers). Copied into
  // the arena or borrowed per plan.options.weights_in_arena (see AttentionLayer::init).
  Status init(const Arena& arena, const LayerWeights* layers, uint32_t n_layers, ThreadPool* pool = nullptr);
  // The same with every layer run as `options` says (its pool, its backend).
  Status init(const Arena& arena, const LayerWeights* layers, uint32_t n_layers, const LayerOptions& options);

  // The same, with the weights fetched one layer at a time: fn(ctx, l) for l = 0..n_layers-1 in
  // order. With weights copied into the arena, the tensors fn returns need only live until the
  // next call (a caller can make or load one layer at a time, in one reusable buffer).
  using LayerWeightsFn = Result<LayerWeights> (*)(void* ctx, uint32_t layer);
  Status init(const Arena& arena, LayerWeightsFn fn, void* ctx, ThreadPool* pool = nullptr);
  Status init(const Arena& arena, LayerWeightsFn fn, void* ctx, const LayerOptions& options);

  // x [t, d_model] f32 at positions position()..; y [t, d_model] (may alias x). t may exceed
  // plan.max_tokens: it runs in chunks of max_tokens (same result as one call per chunk), except
  // in a bidirectional model (whose queries see later keys): there t > max_tokens is an error.
  Status prefill(const float* x, uint32_t t, float* y);
  Status decode(const float* x, float* y) { return prefill(x, 1, y); }
  void reset();

  // An encoder's batch: n_seqs sentences back to back in x [cu_seqlens[n_seqs], d_model], each
  // through every block as a sequence of its own from position 0 (AttentionLayer::
  // forward_packed: one projection over the batch, attention within each sentence), y likewise
  // (may alias x). The whole batch is one call: at most plan.max_tokens tokens, each sentence at
  // most max_seq. Nothing stays cached (position() is 0 after). Allocates nothing.
  Status encode(const float* x, const uint32_t* cu_seqlens, uint32_t n_seqs, float* y);

  uint32_t position() const { return n_layers_ ? layers_[0].position() : 0; }
  uint32_t n_layers() const { return n_layers_; }
  const AttentionLayer& layer(uint32_t l) const { return layers_[l]; }

 private:
  // h = x; for each layer h += attn(h); y = h: one chunk, or (cu_seqlens set) a packed batch.
  Status run_stack(const float* x, uint32_t t, float* y, const uint32_t* cu_seqlens, uint32_t n_seqs);

  const Arena* arena_ = nullptr;
  uint32_t n_layers_ = 0;
  AttentionLayer layers_[kMaxLayers];
};

}  // namespace headway
