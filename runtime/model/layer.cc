#include "headway/layer.hpp"

#include <cmath>
#include <cstring>

#include "headway/detail/row_groups.hpp"
#include "runtime/core/debug_check.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/layer_checks.hpp"
#include "runtime/model/layer_slot.hpp"
#include "runtime/model/model_ops.hpp"
#include "runtime/attention/rope.hpp"
#include "runtime/linear/xnnpack_dense.hpp"

namespace headway {

Status check_layer_tensor(const TensorRef& t, const char* name, uint32_t layer, bool required, uint32_t rows,
                          uint32_t cols) {
  if (!required) return Status();
  if (!t.present()) {
    return Status::error(Code::kInvalidArgument, "layer %u: tensor %s is missing; the config needs it [%u, %u]", layer,
                         name, rows, cols);
  }
  const bool matrix = rows > 1;
  if (!(matrix ? dtype_holds_weights(t.dtype) : dtype_plans_weights(t.dtype))) {
    if (!dtype_known(t.dtype)) {
      return Status::error(Code::kUnsupported, "layer %u: tensor %s has dtype code %u, expected one of %s", layer, name,
                           static_cast<unsigned>(t.dtype), matrix ? kWeightDTypeNames : kPlannedWeightDTypeNames);
    }
    return Status::error(Code::kUnsupported, "layer %u: tensor %s has dtype %s, expected one of %s", layer, name,
                         dtype_name(t.dtype), matrix ? kWeightDTypeNames : kPlannedWeightDTypeNames);
  }
  if (t.cols % dtype_traits(t.dtype).block_values != 0) {
    return Status::error(Code::kInvalidArgument, "layer %u: tensor %s has rows of %u values, not whole %s blocks of %u",
                         layer, name, t.cols, dtype_name(t.dtype), dtype_traits(t.dtype).block_values);
  }
  if (t.row_groups && (!matrix || !row_groups::holds(t.dtype))) {
    return Status::error(Code::kInvalidArgument,
                         "layer %u: tensor %s is marked row_groups in dtype %s (row groups hold matrices of %s)", layer,
                         name, dtype_name(t.dtype), row_groups::kTypeNames);
  }
  if (t.rows != rows || t.cols != cols) {
    return Status::error(Code::kInvalidArgument, "layer %u: tensor %s has shape [%u, %u], expected [%u, %u]", layer,
                         name, t.rows, t.cols, rows, cols);
  }
  return Status();
}

Status check_layer_tensor_finite(const TensorRef& t, const char* name, uint32_t layer) {
  for (uint64_t i = 0; i < t.elements(); ++i) {
    const float v = tensor_at(t, i);
    if (!std::isfinite(v)) {
      return Status::error(Code::kInvalidArgument, "layer %u: tensor %s: %s[%llu] = %g is not finite", layer, name,
                           name, static_cast<unsigned long long>(i), static_cast<double>(v));
    }
  }
  return Status();
}

namespace {

// The sink logits as f32 in the layer's slice of the sinks region (the caller's tensor may go
// away after init, and may be f16 or bf16).
const float* copy_sinks(const TensorRef& sinks, float* slice) {
  convert_tensor(sinks, slice, DType::kF32);
  return slice;
}

}  // namespace

Status check_layer_weights(const Plan& whole, const LayerWeights& w, uint32_t layer) {
  const bool in_plan = layer < whole.config.n_layers;
  if (in_plan && whole.layer(layer).linear) return check_gated_delta_weights(whole, w, layer);
  if (whole.config.is_mla()) return check_mla_weights(whole, w, layer);
  // The layer's own head shape; a layer that shares KV has no K/V projections.
  const Plan plan = in_plan ? layer_plan(whole, layer) : whole;
  const bool kv = !(in_plan && whole.layer(layer).shares_kv);
  const Config& c = plan.config;
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wq, "wq", layer, true, plan.q_rows, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wk, "wk", layer, kv, plan.kv_width, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wv, "wv", layer, kv && !c.k_eq_v, plan.kv_width, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wo, "wo", layer, true, c.d_model, plan.q_width));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.bq, "bq", layer, c.qkv_bias, 1, plan.q_rows));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.bk, "bk", layer, kv && c.qkv_bias, 1, plan.kv_width));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.bv, "bv", layer, kv && c.qkv_bias && !c.k_eq_v, 1, plan.kv_width));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.bo, "bo", layer, c.o_bias, 1, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.q_norm, "q_norm", layer, c.qk_norm, 1, c.q_norm_width()));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.k_norm, "k_norm", layer, kv && c.qk_norm, 1, c.k_norm_width()));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.sinks, "sinks", layer, c.sinks, 1, c.n_heads));
  // Learned sink logits join every row's softmax: an infinite or NaN one would turn whole rows of
  // the output into NaN or zeros.
  if (c.sinks) HEADWAY_RETURN_IF_ERROR(check_layer_tensor_finite(w.sinks, "sinks", layer));
  return Status();
}

AttentionLayer::~AttentionLayer() {
  for (auto& ops : s_.ops) xnn_dense_delete(ops, kXnnMaxBlocks);
}

Status AttentionLayer::init(const Arena& arena, uint32_t layer, const LayerWeights& weights, ThreadPool* pool) {
  LayerOptions options;
  options.pool = pool;
  return init(arena, layer, weights, options);
}

// The layer's backend, from the layer's own plan (layer_plan: its window, its RoPE or none, its KV
// rows): the CPU over the arena's KV region of the layer, its RoPE table (made here, once, at the
// layer's own base) and the scratch, or a GpuBackend on the caller's context. The backend rotates
// both K and Q (rotate_queries): the layer's RoPE is its backend's.
Status AttentionLayer::init_backend(const Plan& p, uint32_t layer, const LayerOptions& options) {
  // Every layer writes the same slopes to the one ALiBi region.
  float* alibi = p.alibi_bytes != 0 ? s_.arena->alibi_slopes() : nullptr;
  if (alibi != nullptr) KvCache::make_alibi_slopes(p, alibi);
  if (s_.kv_owner != nullptr) return Status();  // it reads its owner's backend
  s_.on_gpu = options.backend == BackendKind::kGpu;
  if (s_.on_gpu) return s_.gpu.create(options.gpu, p);
  double* rope = nullptr;
  if (p.rope_bytes_per_layer != 0) {
    rope = s_.arena->rope_layer(layer);
    rope_frequencies(p.config.rope, p.head_dim, rope);
  }
  return s_.cpu.create(p, options.pool, s_.arena->kv_layer(layer), p.kv_bytes_per_layer, rope, s_.arena->scratch(),
                       p.scratch_bytes, alibi);
}

// A layer that shares KV reads the cache of the layer options.kv_owner names, which must be the
// plan's kv_owner, initialized on the same arena.
Status AttentionLayer::init_kv_owner(uint32_t layer, const LayerOptions& options) {
  const uint32_t owner = s_.arena->plan().layer(layer).kv_owner;
  const AttentionLayer* o = options.kv_owner;
  if (o == nullptr || o->s_.plan == nullptr || o->s_.arena != s_.arena || o->s_.layer != owner || o == this) {
    return Status::error(Code::kInvalidArgument,
                         "layer %u has no K/V projections and reads layer %u's cache (num_kv_shared_layers): "
                         "LayerOptions::kv_owner must be layer %u, initialized on the same arena (it is %s)",
                         layer, owner, owner,
                         o == nullptr              ? "null"
                         : o->s_.plan == nullptr   ? "not initialized"
                         : o->s_.arena != s_.arena ? "on another arena"
                                                   : "another layer");
  }
  s_.kv_owner = options.kv_owner;
  s_.on_gpu = s_.kv_owner->s_.on_gpu;
  return Status();
}

Status AttentionLayer::init(const Arena& arena, uint32_t layer, const LayerWeights& weights,
                            const LayerOptions& options) {
  for (auto& ops : s_.ops) xnn_dense_delete(ops, kXnnMaxBlocks);
  s_.plan = nullptr;
  s_.linear = false;
  s_.kv_owner = nullptr;
  s_.packed_used = 0;
  if (!arena.bound()) return Status::error(Code::kFailedPrecondition, "layer: the arena is not bound to a plan");
  const Plan& whole = arena.plan();
  if (layer >= whole.config.n_layers) {
    return Status::error(Code::kInvalidArgument, "layer: index %u, the plan has %u layers", layer,
                         whole.config.n_layers);
  }
  ThreadPool* pool = options.pool;
  if (pool != nullptr && pool->threads() > whole.options.threads) {
    return Status::error(Code::kInvalidArgument,
                         "layer %u: the pool has %u threads, the plan's scratch is for %u (PlanOptions::threads)",
                         layer, pool->threads(), whole.options.threads);
  }
  HEADWAY_RETURN_IF_ERROR(check_layer_weights(whole, weights, layer));
  // From here the layer's own plan: its kind and head shape (a linear layer's: the arena's).
  s_.linear = whole.layer(layer).linear;
  const Plan own = s_.linear ? whole : layer_plan(whole, layer);
  const Plan& p = own;
  const Config& c = p.config;
  if (c.is_mla() && p.options.projection == Projection::kXnnpack) {
    return Status::error(Code::kUnsupported,
                         "layer %u: multi-head latent attention runs on the Highway projections; plan with "
                         "Projection::kHighway (--projection highway)",
                         layer);
  }
  s_.arena = &arena;
  s_.layer = layer;
  s_.pool = pool;
  s_.sinks = nullptr;
  s_.fused_qkv = false;
  s_.op_blocks = 0;
  const bool shares_kv = whole.layer(layer).shares_kv;
  if (shares_kv) HEADWAY_RETURN_IF_ERROR(init_kv_owner(layer, options));
  if (s_.linear) {  // Gated DeltaNet: on the CPU, whatever options.backend says, with no KV cache
    s_.on_gpu = false;
  } else {
    HEADWAY_RETURN_IF_ERROR(init_backend(p, layer, options));
  }
  if (s_.linear || c.is_mla()) {  // their own tensors and slot layouts (gated_delta_layer.cc, mla_layer.cc)
    s_.plan = s_.linear ? &arena.plan() : s_.on_gpu ? &s_.gpu.plan() : &s_.cpu.plan();
    if (s_.linear) {
      init_gated_delta(weights);
    } else {
      init_mla_weights(weights);
    }
    return Status();
  }
  uint8_t* base = arena.weights() - p.weights_offset;
  s_.w = weights;
  s_.sinks = c.sinks ? copy_sinks(weights.sinks, arena.sinks_layer(layer)) : nullptr;

  if (p.options.projection == Projection::kXnnpack) {
    if (!xnnpack_built()) {
      return Status::error(Code::kUnsupported,
                           "layer %u: the plan asks for XNNPACK projections, but this build has none "
                           "(HEADWAY_XNNPACK=OFF); plan with Projection::kHighway",
                           layer);
    }
    uint8_t* region = base + p.packed_offset + uint64_t{layer} * p.packed_bytes_per_layer;
    uint64_t used = 0;
    if (c.qk_norm) {  // the norms outlive the caller's buffers: f32 at the region's start
      float* norms = reinterpret_cast<float*>(region);
      convert_tensor(weights.q_norm, norms, DType::kF32);
      s_.w.q_norm = TensorRef{norms, DType::kF32, 1, c.q_norm_width()};
      if (!shares_kv) {
        convert_tensor(weights.k_norm, norms + c.q_norm_width(), DType::kF32);
        s_.w.k_norm = TensorRef{norms + c.q_norm_width(), DType::kF32, 1, c.k_norm_width()};
      }
    }
    used = align_up((uint64_t{c.q_norm_width()} + c.k_norm_width()) * 4);
    s_.op_blocks = p.projection_blocks;
    const DenseMatrix mats[4] = {{weights.wq, c.qkv_bias ? weights.bq : TensorRef{}},
                                 {weights.wk, c.qkv_bias ? weights.bk : TensorRef{}},
                                 {weights.wv, c.qkv_bias ? weights.bv : TensorRef{}},
                                 {weights.wo, c.o_bias ? weights.bo : TensorRef{}}};
    for (uint32_t i = 0; i < 4; ++i) {
      if ((i == 1 || i == 2) && shares_kv) continue;  // it reads another layer's K and V
      if (i == 2 && c.k_eq_v) continue;               // V is K's projection
      const size_t x_stride = i < 3 ? c.d_model : p.q_width;
      const size_t y_stride = i < 3 ? p.qkv_width : c.d_model;
      HEADWAY_RETURN_IF_ERROR(xnn_dense_create(mats[i], x_stride, y_stride, s_.op_blocks, region,
                                               p.packed_bytes_per_layer, &used, s_.ops[i]));
    }
    s_.packed_used = used;
    // The borrowed tensors may go away after init: nothing but shapes is read from s_.w now.
    for (TensorRef* t : {&s_.w.wq, &s_.w.wk, &s_.w.wv, &s_.w.wo, &s_.w.bq, &s_.w.bk, &s_.w.bv, &s_.w.bo})
      t->data = nullptr;
  } else if (p.options.weights_in_arena) {
    // Layout of the layer's slice (weight_dtype, packed back to back):
    //   Wqkv [q_rows + 2·kv_width, d_model] (Wq, Wk, Wv stacked; no Wv with k_eq_v; Wq alone on a
    //   layer that shares KV), Wo [d_model, q_width], bqkv (likewise), bo [d_model], q_norm and
    //   k_norm [head_dim, or all heads' widths] — the last three only when configured.
    LayerSlotWriter slot{arena.layer_weights(layer), p.options.weight_dtype};
    const auto put = [&slot](const TensorRef& src) { return slot.put(src); };
    s_.w = LayerWeights{};
    const bool own_v = !shares_kv && !c.k_eq_v;
    const uint32_t projected = shares_kv ? p.q_rows : c.k_eq_v ? p.q_rows + p.kv_width : p.qkv_width;
    s_.w.wq = put(weights.wq);
    if (!shares_kv) put(weights.wk);
    if (own_v) put(weights.wv);
    s_.w.wq.rows = projected;
    s_.w.wo = put(weights.wo);
    if (c.qkv_bias) {
      s_.w.bq = put(weights.bq);
      if (!shares_kv) put(weights.bk);
      if (own_v) put(weights.bv);
      s_.w.bq.cols = projected;
    }
    if (c.o_bias) s_.w.bo = put(weights.bo);
    if (c.qk_norm) {
      s_.w.q_norm = put(weights.q_norm);
      if (!shares_kv) s_.w.k_norm = put(weights.k_norm);
    }
    s_.fused_qkv = true;
  }
  if (!c.qkv_bias) s_.w.bq = s_.w.bk = s_.w.bv = TensorRef{};
  if (!c.o_bias) s_.w.bo = TensorRef{};
  if (shares_kv) s_.w.wk = s_.w.wv = s_.w.bk = s_.w.bv = s_.w.k_norm = TensorRef{};
  s_.plan = shares_kv ? s_.kv_owner->s_.plan : s_.on_gpu ? &s_.gpu.plan() : &s_.cpu.plan();
  return Status();
}

void AttentionLayer::reset(uint32_t start_position) {
  if (s_.linear) return reset_gated_delta(start_position);
  if (s_.kv_owner != nullptr) return;  // its owner's reset empties the cache it reads
  backend().reset(start_position);
}

// which: 0 = the Q/K/V projections into the QKV rows, 1 = the O projection into y.
Status AttentionLayer::project(uint32_t which, const float* x, float* y, uint32_t t) {
  const Plan& p = *s_.plan;
  const uint32_t d = p.config.d_model;
  const bool k_eq_v = p.config.k_eq_v;
  if (which == 1) {
    if (s_.op_blocks != 0) return xnn_dense_run(s_.ops[3], s_.op_blocks, d, x, y, t, s_.pool);
    dense_highway({s_.w.wo, s_.w.bo}, x, p.q_width, y, d, t, s_.pool);
    return Status();
  }
  const bool kv = s_.kv_owner == nullptr;  // a layer that shares KV projects its queries alone
  if (s_.op_blocks != 0) {
    HEADWAY_RETURN_IF_ERROR(xnn_dense_run(s_.ops[0], s_.op_blocks, p.q_rows, x, y, t, s_.pool));
    if (kv) HEADWAY_RETURN_IF_ERROR(xnn_dense_run(s_.ops[1], s_.op_blocks, p.kv_width, x, y + p.q_rows, t, s_.pool));
    if (kv && !k_eq_v) {
      HEADWAY_RETURN_IF_ERROR(
          xnn_dense_run(s_.ops[2], s_.op_blocks, p.kv_width, x, y + p.q_rows + p.kv_width, t, s_.pool));
    }
  } else if (s_.fused_qkv) {
    dense_highway({s_.w.wq, s_.w.bq}, x, d, y, p.qkv_width, t, s_.pool);
  } else {
    dense_highway({s_.w.wq, s_.w.bq}, x, d, y, p.qkv_width, t, s_.pool);
    if (kv) dense_highway({s_.w.wk, s_.w.bk}, x, d, y + p.q_rows, p.qkv_width, t, s_.pool);
    if (kv && !k_eq_v) dense_highway({s_.w.wv, s_.w.bv}, x, d, y + p.q_rows + p.kv_width, p.qkv_width, t, s_.pool);
  }
  if (kv && k_eq_v) {  // V: K's projection as it is, before K's norm and RoPE
    for (uint32_t i = 0; i < t; ++i) {
      float* k = y + size_t{i} * p.qkv_width + p.q_rows;
      std::memcpy(k + p.kv_width, k, size_t{p.kv_width} * sizeof(float));
    }
  }
  return Status();
}

// The fused Q/K/V rows of t tokens into the arena's qkv region, q and k RMS-normed per head when
// the config says so (before RoPE, which the callers apply at their positions).
Status AttentionLayer::project_qkv(const float* x, uint32_t t) {
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  float* qkv = s_.arena->qkv();
  const size_t w = p.qkv_width;
  HEADWAY_RETURN_IF_ERROR(project(0, x, qkv, t));
  if (c.output_gate) split_gates(qkv, t);
  if (c.qk_norm) {
    for (uint32_t i = 0; i < t; ++i) {
      float* row = qkv + i * w;
      // Across heads (OLMo 2): q as one head of q_width, k as one of kv_width.
      const bool across = c.qk_norm_across_heads;
      rms_norm_heads(row, across ? 1 : c.n_heads, c.q_norm_width(), &s_.w.q_norm, c.rms_norm_eps, c.qk_norm_offset);
      if (s_.kv_owner == nullptr) {
        rms_norm_heads(row + p.q_rows, across ? 1 : c.kv_heads(), c.k_norm_width(), &s_.w.k_norm, c.rms_norm_eps,
                       c.qk_norm_offset);
      }
    }
  }
  if (c.v_norm && s_.kv_owner == nullptr) {
    for (uint32_t i = 0; i < t; ++i) {
      rms_norm_heads(qkv + i * w + p.q_rows + p.kv_width, c.kv_heads(), p.head_dim, nullptr, c.rms_norm_eps, 0.0f);
    }
  }
  return Status();
}

// Gated attention's Wq rows give each head's query then its gate, [q_0 g_0 q_1 g_1 ...], in the
// row's first q_rows floats; the rest of the layer reads the queries as one block, [q_0 q_1 ... |
// g_0 g_1 ...]. The attention output region, free until attend() writes it, holds the gates on
// the way.
void AttentionLayer::split_gates(float* qkv, uint32_t t) const {
  const Plan& p = *s_.plan;
  const uint32_t hd = p.head_dim;
  const size_t head_bytes = size_t{hd} * sizeof(float);
  float* gates = s_.arena->attention_out();
  for (uint32_t i = 0; i < t; ++i) {
    float* row = qkv + size_t{i} * p.qkv_width;
    float* g = gates + size_t{i} * p.q_width;
    for (uint32_t h = 0; h < p.config.n_heads; ++h) {
      std::memcpy(g + size_t{h} * hd, row + (2 * size_t{h} + 1) * hd, head_bytes);
      if (h != 0) std::memmove(row + size_t{h} * hd, row + 2 * size_t{h} * hd, head_bytes);
    }
    std::memcpy(row + p.q_width, g, size_t{p.q_width} * sizeof(float));
  }
}

// attention · sigmoid(gate), in place, for t tokens (the gates after each row's queries).
void AttentionLayer::apply_gates(const float* qkv, float* attn, uint32_t t) const {
  const Plan& p = *s_.plan;
  for (uint32_t i = 0; i < t; ++i) {
    const float* g = qkv + size_t{i} * p.qkv_width + p.q_width;
    float* o = attn + size_t{i} * p.q_width;
    for (uint32_t j = 0; j < p.q_width; ++j) o[j] *= sigmoid(g[j]);
  }
}

Status AttentionLayer::check_forward(const float* x, const float* y, uint32_t t) const {
  if (s_.plan == nullptr) return Status::error(Code::kFailedPrecondition, "layer: forward before init");
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  if (t == 0 || t > p.max_tokens) {
    return Status::error(Code::kInvalidArgument, "layer %u: %u tokens in one call, expected 1..%u (max_tokens)",
                         s_.layer, t, p.max_tokens);
  }
  if (x == nullptr || y == nullptr) return Status::error(Code::kInvalidArgument, "layer %u: x or y is null", s_.layer);
  if (s_.kv_owner != nullptr && position() < t) {
    return Status::error(Code::kFailedPrecondition,
                         "layer %u reads layer %u's cache, which holds %u tokens: run layer %u over these %u tokens "
                         "first",
                         s_.layer, s_.kv_owner->s_.layer, position(), s_.kv_owner->s_.layer, t);
  }
  if (s_.kv_owner == nullptr && uint64_t{position()} + t > c.max_seq) {
    return Status::error(Code::kOutOfRange, "layer %u: %u tokens at position %u go past the context of %u tokens",
                         s_.layer, t, position(), c.max_seq);
  }
  return Status();
}

Status AttentionLayer::forward(const float* x, float* y, uint32_t t) {
  HEADWAY_RETURN_IF_ERROR(check_forward(x, y, t));
  return forward_unchecked(x, y, t);
}

Status AttentionLayer::forward_unchecked(const float* x, float* y, uint32_t t) {
  HEADWAY_DEBUG_CHECK(check_forward(x, y, t));
  if (s_.linear) return forward_gated_delta(x, y, t);
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  if (c.is_mla()) return forward_mla(x, y, t);
  float* qkv = s_.arena->qkv();
  float* attn = s_.arena->attention_out();
  const size_t w = p.qkv_width;
  HEADWAY_RETURN_IF_ERROR(project_qkv(x, t));
  // K enters the cache (RoPE at its positions there); Q is rotated by the cache as the last t
  // tokens' queries (a layer that shares KV: the last t its owner appended).
  Backend b = backend();
  if (s_.kv_owner == nullptr) {
    HEADWAY_RETURN_IF_ERROR(b.append_unchecked(qkv + p.q_rows, w, qkv + p.q_rows + p.kv_width, w, t));
  }
  b.rotate_queries_unchecked(qkv, w, t);
  HEADWAY_RETURN_IF_ERROR(b.attend_unchecked(qkv, w, attn, p.q_width, t, s_.sinks));
  if (c.output_gate) apply_gates(qkv, attn, t);
  return project(1, attn, y, t);
}

Status AttentionLayer::check_packed(const uint32_t* cu_seqlens, uint32_t n_seqs) const {
  if (s_.plan == nullptr) return Status::error(Code::kFailedPrecondition, "layer: forward before init");
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  if (c.is_mla() || s_.linear || s_.kv_owner != nullptr) {
    return Status::error(Code::kUnsupported, "layer %u: %s does not run packed batches", s_.layer,
                         s_.linear                ? "a Gated DeltaNet layer"
                         : s_.kv_owner != nullptr ? "a layer that reads another layer's cache"
                                                  : "multi-head latent attention");
  }
  if (cu_seqlens == nullptr || n_seqs == 0) {
    return Status::error(Code::kInvalidArgument, "layer %u: a packed batch needs cu_seqlens and n_seqs >= 1", s_.layer);
  }
  if (cu_seqlens[0] != 0) {
    return Status::error(Code::kInvalidArgument, "layer %u: cu_seqlens[0] is %u, expected 0", s_.layer, cu_seqlens[0]);
  }
  for (uint32_t s = 0; s < n_seqs; ++s) {
    if (cu_seqlens[s + 1] <= cu_seqlens[s]) {
      return Status::error(Code::kInvalidArgument,
                           "layer %u: cu_seqlens[%u] = %u is not above cu_seqlens[%u] = %u (sequence %u is empty)",
                           s_.layer, s + 1, cu_seqlens[s + 1], s, cu_seqlens[s], s);
    }
    if (cu_seqlens[s + 1] - cu_seqlens[s] > c.max_seq) {
      return Status::error(Code::kOutOfRange, "layer %u: sequence %u has %u tokens, past the context of %u", s_.layer,
                           s, cu_seqlens[s + 1] - cu_seqlens[s], c.max_seq);
    }
  }
  const uint32_t t = cu_seqlens[n_seqs];
  if (t > p.max_tokens) {
    return Status::error(Code::kInvalidArgument, "layer %u: %u tokens in one call, expected 1..%u (max_tokens)",
                         s_.layer, t, p.max_tokens);
  }
  return Status();
}

Status AttentionLayer::forward_packed(const float* x, float* y, const uint32_t* cu_seqlens, uint32_t n_seqs) {
  HEADWAY_RETURN_IF_ERROR(check_packed(cu_seqlens, n_seqs));
  if (x == nullptr || y == nullptr) return Status::error(Code::kInvalidArgument, "layer %u: x or y is null", s_.layer);
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  const uint32_t t = cu_seqlens[n_seqs];
  float* qkv = s_.arena->qkv();
  float* attn = s_.arena->attention_out();
  const size_t w = p.qkv_width;
  HEADWAY_RETURN_IF_ERROR(project_qkv(x, t));
  Backend b = backend();
  Status status;
  for (uint32_t s = 0; s < n_seqs && status.ok(); ++s) {
    const uint32_t first = cu_seqlens[s], n = cu_seqlens[s + 1] - first;
    float* rows = qkv + first * w;
    b.reset(0);
    status = b.append_unchecked(rows + p.q_rows, w, rows + p.q_rows + p.kv_width, w, n);
    if (!status.ok()) break;
    b.rotate_queries_unchecked(rows, w, n);
    status = b.attend_unchecked(rows, w, attn + size_t{first} * p.q_width, p.q_width, n, s_.sinks);
  }
  b.reset(0);
  HEADWAY_RETURN_IF_ERROR(status);
  if (c.output_gate) apply_gates(qkv, attn, t);
  return project(1, attn, y, t);
}

}  // namespace headway
