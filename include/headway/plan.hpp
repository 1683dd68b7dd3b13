// Plan: every head layout and every byte of memory a Config needs, computed before the first
// token. A pure function of (Config, PlanOptions), usable in constant expressions:
//
//   constexpr headway::Plan p = headway::plan_for(headway::presets::llama2_7b(), {});
//   static_assert(p.kv_bytes_per_token == 524288);
//
// Arena layout (each region starts on a 64-byte boundary):
//   [weights: each layer's slot in order (Plan::layer_weights_offset). An attention layer's:
//             Wqkv [qkv_width, d_model], Wo [d_model, q_width], bqkv [qkv_width], bo [d_model],
//             q_norm [head_dim], k_norm [head_dim] in weight_dtype; absent when weights are
//             borrowed, and with XNNPACK projections (packed below). A Gated DeltaNet layer's
//             (LayerKinds::linear): its f32 vectors (GatedDeltaShape::vector_floats), then, unless
//             borrowed, Win [linear_row, d_model] (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a
//             stacked) and Wout [d_model, value_width] in weight_dtype]
//   [packed: XNNPACK only: n_layers × (q/k norms f32, then the fully-connected operators XNNPACK
//             creates: their packed f32 weights and biases and the operator objects, an upper bound)]
//   [KV cache: each attention layer that owns one (a layer that shares KV reads its kv_owner's),
//             K then V, each [n_kv_heads, rows, head_dim] in kv_dtype, in the layer's head shape
//             (layer_plan), rows its own: max_seq for a full layer, the ring for a sliding one
//             (Plan::layer(i)); a q8_0 / q4_0 row is ceil(head_dim / 32) blocks of ggml's layout,
//             scales inline]
//   [linear state: each Gated DeltaNet layer's state [value_heads, key_head_dim, value_head_dim]
//             f32 and its convolution window [conv_kernel − 1, conv_width] f32 (the last inputs,
//             oldest first), aligned: fixed, whatever the context]
//   [RoPE: n_layers × [rotary_dim / 2] f64, each layer's scaled frequencies at its own base, made
//          once at init (unused by a NoPE layer); absent without RoPE]
//   [sinks: n_layers × [n_heads] f32, each layer's learned sink logits converted at init;
//           absent without sinks (Config::sinks)]
//   [ALiBi: [n_heads] f32, the slopes every layer adds with, made once at init; absent without
//           ALiBi (Config::alibi)]
//   [activations: QKV [max_tokens, qkv_width] f32 (a linear layer's projected rows
//                 [max_tokens, linear_row] where wider), attention out [max_tokens, q_width] f32
//                 (or a linear layer's [max_tokens, value_width]),
//                 block out [max_tokens, d_model] f32, residual stream [max_tokens, d_model] f32]
//   [scratch: threads × scratch_bytes_per_thread (attention's, or the chunked delta rule's where
//             larger), then the split-KV decode partials]
//   With a model (Config::model.vocab_size > 0):
//   [model weights: the tensors of headway/model_tensors.hpp the config has, each aligned, in
//                   f32 (norms, biases) or weight_dtype: the whole-model ones first (embedding,
//                   ..., LM head, in the table's order), then n_layers slices of the per-layer
//                   ones (norms, MLP matrices and biases): model_tensor_offset(). With weights
//                   borrowed (weights_in_arena false) the matrices stay in the source, in its own
//                   types (a GGUF's blocks), and only the f32 tensors are here]
//   [model activations: normed rows [max_tokens, d_model] f32, MLP hidden [max_tokens, 2·ffn] f32
//                       (gate | up), logits [logits_rows, vocab] f32 and the sampler's scratch
//                       (Sampler::scratch_bytes: 8 bytes per vocabulary id) for a decoder]
#pragma once

#include <cstdint>

#include "headway/detail/attention_policy.hpp"
#include "headway/config.hpp"
#include "headway/model_tensors.hpp"
#include "headway/status.hpp"

namespace headway {

enum class KernelKind : uint8_t { kD64 = 0, kD128, kGeneric };
constexpr const char* kernel_name(KernelKind k) {
  return k == KernelKind::kD64 ? "d64" : k == KernelKind::kD128 ? "d128" : "generic";
}
constexpr KernelKind kernel_for_head_dim(uint32_t head_dim) {
  if (!head_dim_specialized(head_dim)) return KernelKind::kGeneric;
  return head_dim == 64 ? KernelKind::kD64 : KernelKind::kD128;
}

// The attention tiling, split-KV policy and their memory: headway/detail/attention_policy.hpp.

// The pairs RoPE rotates in a head: rotary_dim / 2 (all of head_dim when rotary_dim is 0); none
// without RoPE.
constexpr uint32_t rope_pair_count(const RopeConfig& rope, uint32_t head_dim) {
  return rope.style == RopeStyle::kNone ? 0 : (rope.rotary_dim ? rope.rotary_dim : head_dim) / 2;
}
// A layer's RoPE table: one frequency per rotated pair; LongRoPE's holds the short table, then
// the long one.
constexpr uint32_t rope_frequency_count(const RopeConfig& rope, uint32_t head_dim) {
  return rope_pair_count(rope, head_dim) * (rope.scaling == RopeScaling::kLongRope ? 2 : 1);
}

// The engine of the Q/K/V/O projections. Highway: simd/matmul/matmul.h over the weights region (or the
// borrowed weights). XNNPACK: fully-connected operators created at init, whose packed copies of
// the weights live in the packed region (hosted builds with HEADWAY_XNNPACK only).
enum class Projection : uint8_t { kHighway = 0, kXnnpack };
constexpr const char* projection_name(Projection p) { return p == Projection::kXnnpack ? "xnnpack" : "highway"; }

// Upper bounds of what XNNPACK (the 2022 f32 fully-connected operator) allocates, for the plan.
// Its packing rounds the output channels up to the micro-kernel's nr (16 on AVX-512, 8 on NEON;
// kXnnNr leaves room) and the input channels up to kr·sr (1 or 4), adds one bias word per output
// channel; the operator object is a fixed-size struct (2112 bytes in the 2022 snapshot on
// x86-64). Each allocation also pays the arena allocator's 64-byte header and 64-byte alignment.
// tests/runtime/layer_test.cc checks what XNNPACK asked for against this bound. Each projection matrix is
// cut into up to kXnnMaxBlocks operators over its output rows, one per thread, so that the
// layer's own pool runs them.
inline constexpr uint64_t kXnnNr = 32;
inline constexpr uint64_t kXnnKr = 4;
inline constexpr uint64_t kXnnOperatorBytes = 4096;
inline constexpr uint32_t kXnnMaxBlocks = 16;

constexpr uint64_t xnn_packed_bytes_bound(uint64_t out, uint64_t in, uint32_t blocks) {
  const uint64_t k = (in + kXnnKr - 1) / kXnnKr * kXnnKr + 1;
  return (out + kXnnNr * blocks) * k * 4 + blocks * (kXnnOperatorBytes + 4 * kAlignment);
}

struct PlanOptions {
  uint32_t threads = 1;
  // Most tokens per prefill call; 0 = min(512, max_seq). At most max_seq, but for a bidirectional
  // model: there an encoder's packed batch (Session::encode) holds sentences of up to max_seq each.
  uint32_t max_tokens = 0;
  DType weight_dtype = DType::kF32;  // projection weights as the runtime keeps them
  // false: the matrices (the attention projections, a model's embeddings, MLP and LM head) are
  // borrowed (memory-mapped) in the source's own types, not copied; weight_dtype is then unused.
  bool weights_in_arena = true;
  // With a model: logits for every token of a prefill chunk (max_tokens rows), not only the last.
  bool all_logits = false;
  Projection projection = Projection::kHighway;
};

// Whether the arena holds model tensor t (else the source lends it): norms and biases always.
constexpr bool model_tensor_in_arena(const PlanOptions& o, ModelTensor t) {
  return o.weights_in_arena || model_tensor_info(t).f32;
}

struct HeadLayout {
  uint32_t q_head = 0;
  uint32_t kv_head = 0;
  // Byte offsets of this head's q, k and v in one token's row of the fused QKV projection
  // output [qkv_width] f32 (q heads, with an output gate the gate heads, then k heads, then v
  // heads).
  uint64_t qkv_q_offset = 0;
  uint64_t qkv_k_offset = 0;
  uint64_t qkv_v_offset = 0;
  // Byte offsets of this head's K and V blocks inside one layer's KV cache region.
  uint64_t cache_k_offset = 0;
  uint64_t cache_v_offset = 0;
};

// One layer as the plan runs it: its kind, its RoPE and its KV region.
struct LayerPlan {
  uint32_t index = 0;
  bool sliding = false;
  uint32_t window = 0;                // keys a query sees; 0 = all (full attention)
  RopeStyle rope = RopeStyle::kNone;  // kNone on a NoPE layer
  float rope_theta = 0.0f;            // this layer's RoPE base (0 without RoPE)
  uint32_t kv_rows = 0;               // max_seq (full) or the ring (sliding)
  uint64_t kv_bytes = 0;              // K and V, aligned
  uint64_t kv_offset = 0;             // arena offset of its KV region
  bool sinks = false;                 // learned sink logits
  uint32_t sink_tokens = 0;           // StreamingLLM sink tokens the ring keeps (sliding layers)
  bool alibi = false;                 // ALiBi biases
  bool linear = false;                // a Gated DeltaNet layer: no KV (kv_bytes 0), a fixed state
  // Shared KV (Gemma 3n / 4): a layer past the first num_kv_shared_layers owns no cache (kv_bytes
  // 0) and reads kv_owner's (its kv_rows, kv_offset); kv_owner is the layer itself otherwise.
  bool shares_kv = false;
  uint32_t kv_owner = 0;
  uint64_t state_offset = 0;  // arena offset of its state and convolution window (linear)
};

struct Plan {
  Config config;
  PlanOptions options;

  uint32_t head_dim = 0;
  uint32_t group_size = 0;  // query heads per kv head
  uint32_t q_width = 0;     // n_heads · head_dim
  uint32_t q_rows = 0;      // Wq's rows: q_width, or 2 · q_width with an output gate (queries, then gates)
  uint32_t kv_width = 0;    // n_kv_heads · head_dim
  uint32_t qkv_width = 0;   // q_rows + 2 · kv_width (MLA: see mla_rows)
  // MLA (Config::mla): where a fused row's parts sit, in floats: the absorbed queries [q_width]
  // and the shared cache row [kv_width] first, then the model's own query projection [n_heads ·
  // (nope + rope)] at q_proj, its latent [q_lora_rank] at q_a and the heads' values [n_heads ·
  // v_head_dim] at o_v; qkv_width is their sum.
  struct MlaRows {
    uint32_t q_proj = 0, q_a = 0, o_v = 0;
  } mla_rows;
  uint32_t max_tokens = 0;
  // KV rows per layer. Full attention: max_seq. Sliding window W: a ring of W + max_tokens − 1
  // rows, so that a chunk of max_tokens queries appended at once still finds the W keys its
  // oldest query sees (decode, max_tokens 1: exactly W), after the sink_tokens rows it never
  // evicts (KvCache). cache_rows is the largest layer's (every
  // layer's when all are alike); ring_rows a sliding layer's.
  uint32_t cache_rows = 0;
  uint32_t ring_rows = 0;
  uint32_t sliding_layers = 0;    // layers with a window (the rest are full)
  uint32_t linear_layers = 0;     // Gated DeltaNet layers (LayerKinds::linear): no KV cache
  uint32_t kv_shared_layers = 0;  // attention layers that read an earlier layer's cache (shared KV)
  // A linear layer's projected row: [q | k | v] conv_width, z value_width, then b and a
  // (value_heads each); its vectors in the weights region (f32): the convolution's taps
  // [conv_width, conv_kernel], A = −exp(A_log) and dt_bias [value_heads] each, the output norm's
  // weight [value_head_dim].
  uint32_t linear_row = 0;
  KernelKind kernel = KernelKind::kGeneric;

  uint64_t weight_bytes_per_layer = 0;  // the largest attention layer's (layer_plan: a layer's own)
  // An attention layer's weights by its kind, [sliding, full]: one that owns its cache, and one
  // that reads another's (no K/V projections). They differ with shared KV, and where full layers
  // have a head shape of their own (Gemma 4).
  uint64_t owning_weight_bytes[2] = {};
  uint64_t sharing_weight_bytes[2] = {};
  uint64_t weight_bytes = 0;                   // all layers (also when borrowed: what the file provides)
  uint64_t linear_weight_bytes_per_layer = 0;  // a linear layer's slot in the weights region
  uint64_t linear_state_bytes_per_layer = 0;   // a linear layer's state and convolution window
  uint64_t linear_state_bytes = 0;             // all linear layers
  uint64_t weights_region_bytes = 0;           // weight_bytes when copied into the arena for Highway, else 0
  uint32_t projection_blocks = 0;              // XNNPACK operators per matrix (min(threads, kXnnMaxBlocks))
  uint64_t packed_bytes_per_layer = 0;         // XNNPACK: norms + operators of one layer (upper bound)
  uint64_t packed_bytes = 0;                   // all layers
  uint64_t kv_bytes_per_token = 0;             // K and V of one token across all layers
  uint64_t kv_bytes_per_layer = 0;             // the largest layer's cache: cache_rows tokens, K and V, aligned
  uint64_t kv_bytes_sliding_layer = 0;         // a sliding layer's: ring_rows tokens (0 without sliding layers)
  uint64_t kv_bytes_full_layer = 0;            // a full layer's: max_seq tokens
  uint64_t kv_cache_bytes = 0;                 // all layers: the sum of theirs
  uint64_t kv_shared_saved_bytes = 0;          // what the layers that share KV would hold of their own
  uint64_t rope_bytes_per_layer = 0;           // one layer's RoPE frequencies (f64), aligned; 0 without RoPE
  uint64_t rope_bytes = 0;                     // all layers
  uint64_t sinks_bytes_per_layer = 0;          // one layer's sink logits [n_heads] f32, aligned; 0 without sinks
  uint64_t sinks_bytes = 0;                    // all layers
  uint64_t alibi_bytes = 0;                    // the ALiBi slopes [n_heads] f32, aligned; 0 without ALiBi
  uint64_t activation_bytes = 0;
  uint64_t scratch_bytes_per_thread = 0;
  uint64_t attention_partials_bytes = 0;  // split-KV decode partials, shared by the threads
  uint64_t scratch_bytes = 0;             // threads × per thread + the partials

  uint64_t weights_offset = 0;
  uint64_t packed_offset = 0;
  uint64_t kv_offset = 0;
  uint64_t linear_state_offset = 0;
  uint64_t rope_offset = 0;
  uint64_t sinks_offset = 0;
  uint64_t alibi_offset = 0;
  uint64_t activations_offset = 0;    // activations: the fused QKV rows [max_tokens, qkv_width] f32 first
  uint64_t attention_out_offset = 0;  // activations: attention's output [max_tokens, q_width] f32
  uint64_t block_out_offset = 0;      // activations: one block's output [max_tokens, d_model] f32
  uint64_t stream_offset = 0;         // activations: the residual stream [max_tokens, d_model] f32
  uint64_t scratch_offset = 0;
  uint64_t arena_bytes = 0;

  // The model around the blocks (zero without one: Config::model.vocab_size 0).
  uint32_t logits_rows = 0;           // a decoder's: 1, or max_tokens with PlanOptions::all_logits
  uint64_t model_global_bytes = 0;    // the whole-model tensors (embeddings, final norm, head)
  uint64_t model_layer_bytes = 0;     // one layer's norms and MLP, aligned
  uint64_t model_weights_offset = 0;  // the whole-model tensors first, then the layers
  uint64_t model_weights_bytes = 0;
  uint64_t model_activations_offset = 0;  // the normed rows first
  uint64_t mlp_hidden_offset = 0;
  uint64_t logits_offset = 0;
  uint64_t sampler_offset = 0;  // the sampler's scratch [vocab] × (id, value)
  uint64_t model_activation_bytes = 0;

  bool overflow = false;  // a byte count did not fit in 64 bits; validate() reports it

  // Layer i (i < n_layers) as it runs.
  constexpr LayerPlan layer(uint32_t i) const {
    LayerPlan l;
    l.index = i;
    l.linear = config.layer_is_linear(i);
    l.sliding = !l.linear && config.layer_slides(i);
    l.window = l.sliding ? config.window : 0;
    const bool rotates = !l.linear && config.layer_rotates(i);
    l.rope = rotates ? config.rope.style : RopeStyle::kNone;
    l.rope_theta = rotates ? config.layer_rope_theta(i) : 0.0f;
    l.kv_rows = l.linear ? 0 : l.sliding ? ring_rows : config.max_seq;
    l.shares_kv = !l.linear && config.layer_shares_kv(i);
    const uint32_t owner = l.shares_kv ? config.kv_owner(i) : i;
    l.kv_owner = owner < i ? owner : i;  // (an ownerless sharing layer, which validate() refuses: itself)
    l.kv_bytes = l.linear || l.shares_kv ? 0 : l.sliding ? kv_bytes_sliding_layer : kv_bytes_full_layer;
    // The owners come before every sharing layer: their caches are back to back in layer order.
    const uint32_t o = l.kv_owner;
    const uint32_t sliding_before = config.sliding_layers_before(o);
    const uint32_t linear_before = config.linear_layers_before(i);
    l.kv_offset = kv_offset + uint64_t{sliding_before} * kv_bytes_sliding_layer +
                  uint64_t{o - sliding_before - config.linear_layers_before(o)} * kv_bytes_full_layer;
    l.state_offset = linear_state_offset + uint64_t{linear_before} * linear_state_bytes_per_layer;
    l.sinks = config.sinks;
    l.sink_tokens = l.sliding ? config.sink_tokens : 0;
    l.alibi = config.alibi;
    return l;
  }

  // Attention layer i's weight bytes, by its kind (owning_weight_bytes, sharing_weight_bytes).
  constexpr uint64_t attention_weight_bytes(uint32_t i) const {
    const bool full = !config.layer_slides(i);
    return config.layer_shares_kv(i) ? sharing_weight_bytes[full] : owning_weight_bytes[full];
  }
  // Layer i's slot in the weights region: an attention layer's weights when the arena holds them;
  // a linear layer's linear_weight_bytes_per_layer.
  constexpr uint64_t layer_weights_slot(uint32_t i) const {
    if (config.layer_is_linear(i)) return linear_weight_bytes_per_layer;
    return options.weights_in_arena && options.projection != Projection::kXnnpack ? attention_weight_bytes(i) : 0;
  }
  // Where layer i's slot starts: the slots of the layers before it, in order.
  constexpr uint64_t layer_weights_offset(uint32_t i) const {
    uint64_t offset = weights_offset;
    for (uint32_t j = 0; j < i && j < config.n_layers; ++j) offset += layer_weights_slot(j);
    return offset;
  }

  // The head layout of a plan whose layers are alike (a layer's own: layer_plan(plan, i).head()).
  constexpr HeadLayout head(uint32_t h) const {
    HeadLayout l;
    l.q_head = h;
    l.kv_head = group_size ? h / group_size : 0;
    l.qkv_q_offset = uint64_t{h} * head_dim * 4;
    l.qkv_k_offset = (uint64_t{q_rows} + uint64_t{l.kv_head} * head_dim) * 4;
    l.qkv_v_offset = (uint64_t{q_rows} + kv_width + uint64_t{l.kv_head} * head_dim) * 4;
    const uint64_t block = uint64_t{cache_rows} * dtype_row_bytes(config.kv_dtype, head_dim);
    l.cache_k_offset = uint64_t{l.kv_head} * block;
    l.cache_v_offset = uint64_t{config.kv_heads()} * block + uint64_t{l.kv_head} * block;
    if (config.is_mla()) {  // V is K's row
      l.qkv_v_offset = l.qkv_k_offset;
      l.cache_v_offset = l.cache_k_offset;
    }
    return l;
  }
};

}  // namespace headway

// plan_for(): the sizes and offsets above, computed.
#include "headway/detail/plan_for.hpp"  // IWYU pragma: export

namespace headway {

// The plan layer i runs on: the whole plan with its config narrowed to that layer as
// Config::layer_alone narrows it (its window and whether it is symmetric, its sink tokens, its
// RoPE or none, its base, its head shape; no per-layer kinds left), still counting every layer,
// its head shape's widths and weight bytes, and the KV rows and bytes of the cache it reads (its
// own, or its kv_owner's). What a backend is created from; equal to `p` for a layer of a plan
// whose layers are alike.
constexpr Plan layer_plan(const Plan& p, uint32_t i) {
  const LayerPlan l = p.layer(i);
  const LayerPlan kv = p.layer(l.kv_owner);
  Plan q = p;
  q.config = p.config.layer_alone(i);
  q.config.n_layers = p.config.n_layers;
  if (!l.linear && !l.sliding && p.config.full_layers_shaped()) {  // Gemma 4's full layers
    detail::Checked ck;  // plan_for checked these widths when it planned the full shape
    const detail::HeadWidths h = detail::head_widths(q.config, ck);
    q.head_dim = static_cast<uint32_t>(h.head_dim);
    q.group_size = static_cast<uint32_t>(h.group);
    q.q_width = static_cast<uint32_t>(h.q_width);
    q.q_rows = static_cast<uint32_t>(h.q_rows);
    q.kv_width = static_cast<uint32_t>(h.kv_width);
    q.qkv_width = static_cast<uint32_t>(h.qkv_width);
    q.kernel = kernel_for_head_dim(q.head_dim);
  }
  if (!l.linear) q.weight_bytes_per_layer = p.attention_weight_bytes(i);
  q.cache_rows = kv.kv_rows;
  q.ring_rows = kv.sliding ? kv.kv_rows : 0;
  q.sliding_layers = l.sliding ? q.config.n_layers : 0;
  q.kv_bytes_per_layer = kv.kv_bytes;
  q.kv_bytes_sliding_layer = kv.sliding ? kv.kv_bytes : 0;
  q.kv_bytes_full_layer = kv.sliding ? p.kv_bytes_full_layer : kv.kv_bytes;
  if (l.rope == RopeStyle::kNone) q.rope_bytes_per_layer = 0;
  return q;
}

// "MHA" (one query head per kv head), "MQA" (one kv head) or "GQA".
constexpr const char* attention_kind_name(const Plan& p) {
  return p.group_size == 1 ? "MHA" : p.config.kv_heads() == 1 ? "MQA" : "GQA";
}

// Bytes of model tensor t in the plan's model weights region (0 when the config has none, or when
// it is borrowed).
constexpr uint64_t model_tensor_bytes(const Plan& p, ModelTensor t) {
  if (!model_has_tensor(p.config, t) || !model_tensor_in_arena(p.options, t)) return 0;
  const TensorShape s = model_tensor_shape(p.config, t);
  return align_up(uint64_t{s.rows} * s.cols * (model_tensor_info(t).f32 ? 4 : dtype_bytes(p.options.weight_dtype)));
}
// Where tensor t (of `layer`, for a per-layer one) sits in the model weights region, from its
// start: the whole-model tensors in the table's order, then each layer's slice in the same order.
constexpr uint64_t model_tensor_offset(const Plan& p, ModelTensor t, uint32_t layer) {
  const bool per_layer = model_tensor_info(t).per_layer;
  uint64_t offset = per_layer ? p.model_global_bytes + uint64_t{layer} * p.model_layer_bytes : 0;
  for (const ModelTensorInfo& info : kModelTensors) {
    if (info.per_layer != per_layer) continue;
    if (info.tensor == t) return offset;
    offset += model_tensor_bytes(p, info.tensor);
  }
  return offset;
}

// The arena's regions in order, as one table (what Arena carves, what reports print and measure).
// slice: the bytes of one layer in a per-layer region (the KV cache's largest layer: each layer's
// own is Plan::layer(i).kv_bytes), the region's bytes in the others.
struct ArenaRegion {
  const char* name;
  uint64_t offset;
  uint64_t bytes;
  uint64_t slice;
};
inline constexpr uint32_t kArenaRegionCount = 11;
struct ArenaRegions {
  ArenaRegion region[kArenaRegionCount];
};
constexpr ArenaRegions arena_regions(const Plan& p) {
  return {{{"weights", p.weights_offset, p.weights_region_bytes, p.weight_bytes_per_layer},
           {"packed", p.packed_offset, p.packed_bytes, p.packed_bytes_per_layer},
           {"kv_cache", p.kv_offset, p.kv_cache_bytes, p.kv_bytes_per_layer},
           {"linear_state", p.linear_state_offset, p.linear_state_bytes, p.linear_state_bytes_per_layer},
           {"rope", p.rope_offset, p.rope_bytes, p.rope_bytes_per_layer},
           {"sinks", p.sinks_offset, p.sinks_bytes, p.sinks_bytes_per_layer},
           {"alibi", p.alibi_offset, p.alibi_bytes, p.alibi_bytes},
           {"activations", p.activations_offset, p.activation_bytes, p.activation_bytes},
           {"scratch", p.scratch_offset, p.scratch_bytes, p.scratch_bytes},
           {"model_weights", p.model_weights_offset, p.model_weights_bytes, p.model_weights_bytes},
           {"model_activations", p.model_activations_offset, p.model_activation_bytes, p.model_activation_bytes}}};
}

// validate() + plan_for(): the plan, or the Status that says why the config cannot work.
Result<Plan> make_plan(const Config& config, const PlanOptions& options = {});

// Whether `p` can be a plan make_plan() made: the caches and backends refuse any other (a Plan{},
// one whose sizes overflowed), naming make_plan().
constexpr bool plan_is_made(const Plan& p) {
  return !p.overflow && p.group_size != 0 && p.head_dim != 0 && p.head_dim <= kMaxHeadDim && p.max_tokens != 0 &&
         p.cache_rows != 0 && p.kv_bytes_per_layer != 0;
}

// Whether the rotations of `rope` are ones headway computes: no RoPE, or RoPE with no scaling or
// linear, llama3, yarn or longrope scaling from their parameters (not kOther, which is planned but
// refused where attention would run with it).
constexpr bool rope_rotations_known(const RopeConfig& rope) {
  return rope.style == RopeStyle::kNone || rope.scaling != RopeScaling::kOther;
}

}  // namespace headway
