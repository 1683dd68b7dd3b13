// validate(): every rule a Config must meet, each failure a message that names the values and
// says how to fix it. Rules run in the order a user fixes them: unsupported architecture, then
// missing sizes, then the head arithmetic, then positions and options, then byte counts.
#include <cmath>

#include "headway/config.hpp"
#include "headway/hadamard.hpp"
#include "headway/plan.hpp"
#include "runtime/core/format.hpp"

namespace headway {
namespace {

bool finite(float v) { return std::isfinite(v); }

// kv_rotation: a known value; hadamard only over a block-quantized cache (it spreads a block's
// outliers before its scale is chosen: f32/f16/bf16 rows gain nothing) and a head_dim it rotates.
Status validate_kv_rotation(const Config& c) {
  if (c.kv_rotation == KvRotation::kNone) return Status();
  if (c.kv_rotation != KvRotation::kHadamard) {
    return Status::error(Code::kInvalidArgument, "kv_rotation %u is not one of %s",
                         static_cast<unsigned>(c.kv_rotation), kKvRotationNames);
  }
  if (!dtype_quantizes_kv(c.kv_dtype)) {
    return Status::error(Code::kInvalidArgument,
                         "kv_rotation hadamard needs kv_dtype %s, not kv_dtype %s (the rotation spreads a quantized "
                         "block's outliers; other dtypes gain nothing)",
                         kQuantizedKvDTypeNames, dtype_name(c.kv_dtype));
  }
  const uint32_t hd = c.head_size();
  if (hadamard_block(hd) == 0) {
    return Status::error(Code::kInvalidArgument,
                         "kv_rotation hadamard cannot rotate head_dim %u: it rotates by blocks of the largest power "
                         "of two dividing head_dim, which must be at least 32 (head_dim 64, 96, 128, 288, 576...)",
                         hd);
  }
  return Status();
}

// "head counts that divide 800 near 12: 10 (head_dim 80), 16 (head_dim 50)": the nearest
// divisor of d_model below n_heads and the nearest above, whichever exist.
Status not_divisible(uint32_t d_model, uint32_t n_heads) {
  uint32_t below = 0, above = 0;
  for (uint32_t h = n_heads - 1; h >= 1 && !below; --h) {
    if (d_model % h == 0) below = h;
  }
  // Only head counts validate() accepts (<= kMaxHeads): a search up to d_model would take
  // seconds for a large prime d_model.
  for (uint32_t h = n_heads + 1; h <= d_model && h <= kMaxHeads && !above; ++h) {
    if (d_model % h == 0) above = h;
  }
  char near[96] = {};
  size_t n = 0;
  if (below) n += format_to(near + n, sizeof(near) - n, "%u (head_dim %u)", below, d_model / below);
  if (above) {
    n += format_to(near + n, sizeof(near) - n, "%s%u (head_dim %u)", below ? ", " : "", above, d_model / above);
  }
  return Status::error(Code::kInvalidArgument,
                       "hidden_size %u is not divisible by num_heads %u (%u / %u = %.2f); head counts "
                       "that divide %u near %u: %s; or set head_dim explicitly",
                       d_model, n_heads, d_model, n_heads, static_cast<double>(d_model) / n_heads, d_model, n_heads,
                       near);
}

Status kv_not_dividing(uint32_t n_heads, uint32_t n_kv_heads) {
  char list[160] = {};
  size_t n = 0;
  for (uint32_t g = 1; g <= n_heads; ++g) {
    if (n_heads % g == 0) n += format_to(list + n, sizeof(list) - n, "%s%u", n ? ", " : "", g);
  }
  return Status::error(Code::kInvalidArgument,
                       "num_heads %u is not divisible by num_key_value_heads %u: every kv head must serve "
                       "the same number of query heads; kv head counts that work: %s",
                       n_heads, n_kv_heads, list);
}

// One explicit per-layer list: its length is n_layers.
Status check_layer_list(const Config& c, const char* key, uint32_t count) {
  if (count == 0) return Status();
  if (count > kMaxConfigLayers) {
    return Status::error(Code::kInvalidArgument, "%s has %u entries, more than the %u a config lists", key, count,
                         kMaxConfigLayers);
  }
  if (count != c.n_layers) {
    return Status::error(Code::kInvalidArgument, "%s has %u entries, num_hidden_layers is %u: one entry per layer", key,
                         count, c.n_layers);
  }
  return Status();
}

// Shared KV (Gemma 3n / 4): every sharing layer finds an earlier layer of its kind that owns a
// cache, in a causal stack of standard attention layers (MLA's rows and linear layers' states are
// not caches another layer reads).
Status validate_shared_kv(const Config& c) {
  const LayerKinds& k = c.layers;
  const uint32_t first_shared = c.first_kv_shared_layer();
  if (c.is_mla() || c.linear_layers_before(c.n_layers) != 0 || !c.causal) {
    return Status::error(Code::kUnsupported,
                         "num_kv_shared_layers %u: layers read an earlier layer's K/V cache only in a causal stack of "
                         "standard attention layers (this config has %s)",
                         k.kv_shared_layers,
                         c.is_mla()  ? "MLA"
                         : !c.causal ? "bidirectional attention"
                                     : "linear attention layers");
  }
  for (uint32_t i = first_shared; i < c.n_layers; ++i) {
    const uint32_t owner = c.kv_owner(i);
    if (owner == c.n_layers) {
      return Status::error(Code::kInvalidArgument,
                           "layer %u reads the cache of an earlier %s layer (num_kv_shared_layers %u), and no layer "
                           "before %u is one",
                           i, c.layer_slides(i) ? "sliding" : "full", k.kv_shared_layers, first_shared);
    }
    // Its queries meet keys its owner rotated: the same RoPE (or none) at the same base.
    if (c.layer_rotates(i) != c.layer_rotates(owner)) {
      return Status::error(Code::kInvalidArgument,
                           "layer %u reads layer %u's cache (num_kv_shared_layers %u), but %s RoPE where layer %u "
                           "%s: a layer sharing KV rotates as its owner",
                           i, owner, k.kv_shared_layers, c.layer_rotates(i) ? "has" : "has no", owner,
                           c.layer_rotates(owner) ? "has" : "has none");
    }
  }
  return Status();
}

// How layers differ (LayerKinds): one rule per question (which slide, which rotate), lists of
// n_layers entries, sliding layers only with a window, NoPE layers only with RoPE.
Status validate_layer_kinds(const Config& c) {
  const LayerKinds& k = c.layers;
  if (k.sliding_pattern && k.sliding.count) {
    return Status::error(Code::kInvalidArgument,
                         "sliding_pattern %u and a layer_types list of %u entries both say which layers slide; "
                         "give one",
                         k.sliding_pattern, k.sliding.count);
  }
  if (k.nope_interval && k.rope.count) {
    return Status::error(Code::kInvalidArgument,
                         "nope_interval %u and a rope_layers list of %u entries both say which layers rotate; give one",
                         k.nope_interval, k.rope.count);
  }
  HEADWAY_RETURN_IF_ERROR(check_layer_list(c, "layer_types", k.sliding.count));
  HEADWAY_RETURN_IF_ERROR(check_layer_list(c, "rope_layers", k.rope.count));
  HEADWAY_RETURN_IF_ERROR(check_layer_list(c, "linear layers", k.linear.count));
  if (k.kv_shared_layers > c.n_layers) {
    return Status::error(Code::kInvalidArgument, "num_kv_shared_layers %u is more than the %u layers",
                         k.kv_shared_layers, c.n_layers);
  }
  if (k.kv_shared_layers != 0) HEADWAY_RETURN_IF_ERROR(validate_shared_kv(c));
  bool any_sliding = k.sliding_pattern > 1;
  for (uint32_t i = 0; i < k.sliding.count; ++i) any_sliding = any_sliding || k.sliding.get(i);
  if (c.window == 0 && any_sliding) {
    return Status::error(Code::kInvalidArgument,
                         "%s names sliding layers, but sliding_window is 0: give the window they slide with",
                         k.sliding.count ? "layer_types" : "sliding_pattern");
  }
  if (c.rope.style == RopeStyle::kNone && (k.nope_interval || k.rope.count)) {
    return Status::error(Code::kInvalidArgument, "%s says which layers have RoPE, but the config has none (rope none)",
                         k.rope.count ? "rope_layers" : "nope_interval");
  }
  if (!finite(k.local_rope_theta) || k.local_rope_theta < 0.0f) {
    return Status::error(Code::kInvalidArgument, "rope_local_base_freq %g must be 0 (rope_theta) or positive",
                         static_cast<double>(k.local_rope_theta));
  }
  return Status();
}

// YaRN's ramp needs beta_fast > beta_slow > 0 and the original context; its attention factor
// and mscales are finite, the factor (0 = derived) not negative.
// The model around the blocks: a decoder of the kind Model runs (ModelConfig), or none.
Status validate_model(const Config& c) {
  const ModelConfig& m = c.model;
  if (m.vocab_size == 0) {
    if (m.intermediate_size || m.norm != NormKind::kNone || m.mlp != MlpKind::kNone) {
      return Status::error(Code::kInvalidArgument,
                           "vocab_size is 0 but the model names an MLP (intermediate_size %u, mlp %s) or a norm (%s): "
                           "a model needs its vocabulary",
                           m.intermediate_size, mlp_kind_name(m.mlp), norm_kind_name(m.norm));
    }
    return Status();
  }
  if (m.norm == NormKind::kNone) {
    return Status::error(Code::kInvalidArgument, "norm none: a model's layers need their norms (norm rms or layer)");
  }
  if (m.mlp == MlpKind::kNone) {
    return Status::error(Code::kInvalidArgument,
                         "mlp none: a model's layers need their MLP (mlp swiglu, geglu or gelu)");
  }
  // The two kinds of model headway runs: pre-norm decoders (Model) and post-norm encoders (Encoder).
  if (c.causal == m.post_norm) {
    return Status::error(Code::kUnsupported,
                         "a %s model with %s norms: headway runs pre-norm decoders (causal) and post-norm encoders "
                         "(bidirectional, as BERT)",
                         c.causal ? "causal" : "bidirectional", m.post_norm ? "post" : "pre");
  }
  if (m.intermediate_size == 0) {
    return Status::error(Code::kInvalidArgument, "intermediate_size is 0: the MLP needs its hidden width");
  }
  if (!finite(m.norm_eps) || m.norm_eps <= 0.0f) {
    return Status::error(Code::kInvalidArgument, "norm eps %g must be a positive number (rms_norm_eps, layer_norm_eps)",
                         static_cast<double>(m.norm_eps));
  }
  if (m.padding_idx >= 0 && (m.max_positions == 0 || static_cast<uint32_t>(m.padding_idx) + 1 >= m.max_positions)) {
    return Status::error(Code::kInvalidArgument,
                         "padding_idx %d leaves no position of the %u learned ones (max_position_embeddings)",
                         m.padding_idx, m.max_positions);
  }
  if (!finite(m.norm_offset)) {
    return Status::error(Code::kInvalidArgument, "norm offset %g must be a finite number",
                         static_cast<double>(m.norm_offset));
  }
  if (!finite(m.final_softcap) || m.final_softcap < 0.0f) {
    return Status::error(Code::kInvalidArgument, "final_logit_softcapping %g must be 0 (off) or positive",
                         static_cast<double>(m.final_softcap));
  }
  if (m.gate_up_fused && m.mlp != MlpKind::kSwiGlu) {
    return Status::error(Code::kInvalidArgument, "a fused gate and up projection (Phi-3) belongs to a SwiGLU MLP");
  }
  if (m.output_norms_only && (m.sandwich_norm || m.post_norm || m.norm != NormKind::kRms)) {
    return Status::error(Code::kInvalidArgument,
                         "norms on each block's output alone (OLMo 2) are RMSNorm, with no other norm placement");
  }
  if (m.sandwich_norm && (m.post_norm || m.norm != NormKind::kRms)) {
    return Status::error(Code::kInvalidArgument,
                         "norms on each block's output (Gemma 2/3) come with pre-norm RMSNorm layers, not %s-norm %s",
                         m.post_norm ? "post" : "pre", norm_kind_name(m.norm));
  }
  return Status();
}

Status validate_longrope(const RopeConfig& r, uint32_t pairs) {
  if (r.longrope_pairs != pairs || pairs > kMaxLongRopePairs) {
    return Status::error(Code::kInvalidArgument,
                         "rope_scaling longrope has %u short and long factors; the %u rotated pairs need one each%s",
                         r.longrope_pairs, pairs, pairs > kMaxLongRopePairs ? " (headway holds up to 64)" : "");
  }
  for (uint32_t i = 0; i < pairs; ++i) {
    if (!finite(r.short_factor[i]) || !finite(r.long_factor[i]) || r.short_factor[i] <= 0.0f ||
        r.long_factor[i] <= 0.0f) {
      return Status::error(Code::kInvalidArgument,
                           "rope_scaling longrope: short_factor[%u] %g and long_factor[%u] %g must be positive", i,
                           static_cast<double>(r.short_factor[i]), i, static_cast<double>(r.long_factor[i]));
    }
  }
  if (r.original_max_seq == 0 || !finite(r.factor) || r.factor <= 0.0f || !finite(r.attention_factor) ||
      r.attention_factor < 0.0f) {
    return Status::error(Code::kInvalidArgument,
                         "rope_scaling longrope needs a positive original_max_position_embeddings and factor and an "
                         "attention_factor >= 0 (0 = from the factor); got %u, %g, %g",
                         r.original_max_seq, static_cast<double>(r.factor), static_cast<double>(r.attention_factor));
  }
  return Status();
}

Status validate_yarn(const RopeConfig& r) {
  if (!finite(r.beta_fast) || !finite(r.beta_slow) || r.beta_slow <= 0.0f || r.beta_fast <= r.beta_slow) {
    return Status::error(Code::kInvalidArgument, "rope_scaling yarn needs beta_fast > beta_slow > 0; got %g, %g",
                         static_cast<double>(r.beta_fast), static_cast<double>(r.beta_slow));
  }
  if (r.original_max_seq == 0) {
    return Status::error(Code::kInvalidArgument, "rope_scaling yarn needs a positive original_max_position_embeddings");
  }
  if (!finite(r.attention_factor) || r.attention_factor < 0.0f || !finite(r.mscale) || !finite(r.mscale_all_dim)) {
    return Status::error(Code::kInvalidArgument,
                         "rope_scaling yarn: attention_factor %g must be >= 0 (0 = from the factor), mscale %g and "
                         "mscale_all_dim %g finite",
                         static_cast<double>(r.attention_factor), static_cast<double>(r.mscale),
                         static_cast<double>(r.mscale_all_dim));
  }
  return Status();
}

// Multi-head latent attention: its head sizes, and the attention shape they make (MlaShape).
Status validate_mla(const Config& c) {
  const MlaShape& m = c.mla;
  if (m.qk_rope_head_dim == 0 || m.qk_rope_head_dim % 2 != 0 || m.qk_nope_head_dim == 0 || m.v_head_dim == 0) {
    return Status::error(Code::kInvalidArgument,
                         "MLA: qk_rope_head_dim %u must be even and positive, qk_nope_head_dim %u and v_head_dim %u "
                         "positive (kv_lora_rank %u)",
                         m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim, m.kv_lora_rank);
  }
  const uint64_t row = uint64_t{m.kv_lora_rank} + m.qk_rope_head_dim;
  if (row > kMaxHeadDim) {
    return Status::error(Code::kUnsupported,
                         "MLA: kv_lora_rank %u + qk_rope_head_dim %u = %llu values per cache row, more than the %u "
                         "the kernels hold",
                         m.kv_lora_rank, m.qk_rope_head_dim, static_cast<unsigned long long>(row), kMaxHeadDim);
  }
  if (c.head_dim != row || c.kv_heads() != 1) {
    return Status::error(Code::kInvalidArgument,
                         "MLA: the attention runs on one shared row of kv_lora_rank + qk_rope_head_dim = %llu values: "
                         "head_dim must be %llu and n_kv_heads 1 (got %u and %u)",
                         static_cast<unsigned long long>(row), static_cast<unsigned long long>(row), c.head_dim,
                         c.kv_heads());
  }
  if (c.rope.style != RopeStyle::kNone && c.rope.rotary_dim != m.qk_rope_head_dim) {
    return Status::error(Code::kInvalidArgument,
                         "MLA: RoPE rotates the qk_rope_head_dim %u values at the start of each row, not %u",
                         m.qk_rope_head_dim, c.rope.rotary_dim);
  }
  if (c.qkv_bias || c.o_bias || c.qk_norm || c.output_gate || c.v_norm || c.k_eq_v || c.sinks || c.alibi ||
      c.window != 0) {
    return Status::error(Code::kUnsupported,
                         "MLA: biases, q/k norms, output gates, v norms, sinks, ALiBi and sliding windows are not run "
                         "with multi-head latent attention");
  }
  return Status();
}

// Gated DeltaNet layers (LayerKinds::linear): their shape whole, value heads a multiple of key
// heads, head sizes the kernels hold; a causal stack without a window (its state sees every
// earlier token) of standard attention layers around them.
Status validate_gated_delta(const Config& c) {
  const GatedDeltaShape& g = c.gated_delta;
  const uint32_t linear = c.linear_layers_before(c.n_layers);
  if (g.key_heads == 0 || g.value_heads == 0 || g.key_head_dim == 0 || g.value_head_dim == 0 || g.conv_kernel == 0) {
    return Status::error(Code::kInvalidArgument,
                         "%u linear_attention layer%s (Gated DeltaNet) need linear_num_key_heads %u, "
                         "linear_num_value_heads %u, linear_key_head_dim %u, linear_value_head_dim %u and "
                         "linear_conv_kernel_dim %u all positive",
                         linear, linear == 1 ? "" : "s", g.key_heads, g.value_heads, g.key_head_dim, g.value_head_dim,
                         g.conv_kernel);
  }
  if (g.value_heads % g.key_heads != 0) {
    return Status::error(Code::kInvalidArgument,
                         "linear_num_value_heads %u is not a multiple of linear_num_key_heads %u: each key head serves "
                         "a whole number of value heads",
                         g.value_heads, g.key_heads);
  }
  if (g.key_heads > kMaxHeads || g.value_heads > kMaxHeads || g.key_head_dim > kMaxHeadDim ||
      g.value_head_dim > kMaxHeadDim || g.conv_kernel > kMaxGatedDeltaConvKernel) {
    return Status::error(
        Code::kUnsupported,
        "Gated DeltaNet: %u key heads, %u value heads (at most %u), head sizes %u and %u (at most %u), "
        "conv kernel %u (at most %u)",
        g.key_heads, g.value_heads, kMaxHeads, g.key_head_dim, g.value_head_dim, kMaxHeadDim, g.conv_kernel,
        kMaxGatedDeltaConvKernel);
  }
  if (!c.causal || c.window != 0 || c.is_mla()) {
    return Status::error(Code::kUnsupported,
                         "Gated DeltaNet layers run in a causal stack without a sliding window or MLA (causal %d, "
                         "window %u, kv_lora_rank %u)",
                         c.causal ? 1 : 0, c.window, c.mla.kv_lora_rank);
  }
  return Status();
}

}  // namespace

Status validate(const Config& c) {
  if (c.is_mla()) HEADWAY_RETURN_IF_ERROR(validate_mla(c));
  if (c.d_model == 0) return Status::error(Code::kInvalidArgument, "hidden_size (d_model) must be positive, got 0");
  if (c.n_heads == 0) return Status::error(Code::kInvalidArgument, "num_heads must be positive, got 0");
  if (c.n_heads > kMaxHeads) {
    return Status::error(Code::kInvalidArgument, "num_heads %u is above the supported maximum %u", c.n_heads,
                         kMaxHeads);
  }
  if (c.n_kv_heads > c.n_heads) {
    return Status::error(Code::kInvalidArgument,
                         "num_key_value_heads %u is more than num_heads %u: kv heads are shared by query "
                         "heads, so there are at most as many",
                         c.n_kv_heads, c.n_heads);
  }
  if (c.n_heads % c.kv_heads() != 0) return kv_not_dividing(c.n_heads, c.kv_heads());
  if (c.head_dim == 0 && c.d_model % c.n_heads != 0) return not_divisible(c.d_model, c.n_heads);
  const uint32_t hd = c.head_size();
  if (hd == 0) {
    return Status::error(Code::kInvalidArgument, "head_dim is 0: hidden_size %u over num_heads %u", c.d_model,
                         c.n_heads);
  }
  if (hd > kMaxHeadDim) {
    return Status::error(Code::kUnsupported, "head_dim %u is above the largest supported head size %u", hd,
                         kMaxHeadDim);
  }
  if (c.max_seq == 0) {
    return Status::error(Code::kInvalidArgument, "max_position_embeddings (max_seq) must be positive, got 0");
  }
  if (c.n_layers == 0) {
    return Status::error(Code::kInvalidArgument, "num_hidden_layers (n_layers) must be positive, got 0");
  }
  if (c.rope.style != RopeStyle::kNone && c.rope.style != RopeStyle::kNeox && c.rope.style != RopeStyle::kGptj) {
    return Status::error(Code::kInvalidArgument, "rope style %u is not one of none, neox, gptj",
                         static_cast<unsigned>(c.rope.style));
  }
  if (c.rope.style != RopeStyle::kNone) {
    if (!finite(c.rope.theta) || c.rope.theta <= 0.0f) {
      return Status::error(Code::kInvalidArgument, "rope_theta %g must be a positive finite number",
                           static_cast<double>(c.rope.theta));
    }
    const uint32_t rd = c.rotary_dims();
    if (rd > hd) {
      return Status::error(Code::kInvalidArgument, "rotary dim %u is larger than head_dim %u", rd, hd);
    }
    if (rd % 2 != 0) {
      return Status::error(Code::kInvalidArgument,
                           "rotary dim %u is odd: RoPE rotates pairs of dimensions, so it must be even "
                           "(head_dim %u)",
                           rd, hd);
    }
  }
  if (c.rope.style != RopeStyle::kNone &&
      (c.rope.scaling == RopeScaling::kLinear || c.rope.scaling == RopeScaling::kLlama3 ||
       c.rope.scaling == RopeScaling::kYarn || c.rope.scaling == RopeScaling::kDynamic ||
       c.rope.scaling == RopeScaling::kProportional)) {
    if (!finite(c.rope.factor) || c.rope.factor <= 0.0f) {
      return Status::error(Code::kInvalidArgument, "rope_scaling factor %g must be a positive finite number",
                           static_cast<double>(c.rope.factor));
    }
    if (c.rope.scaling == RopeScaling::kLlama3 &&
        (!finite(c.rope.low_freq_factor) || !finite(c.rope.high_freq_factor) || c.rope.low_freq_factor <= 0.0f ||
         c.rope.high_freq_factor <= c.rope.low_freq_factor || c.rope.original_max_seq == 0)) {
      return Status::error(Code::kInvalidArgument,
                           "rope_scaling llama3 needs 0 < low_freq_factor < high_freq_factor and a positive "
                           "original_max_position_embeddings; got %g, %g, %u",
                           static_cast<double>(c.rope.low_freq_factor), static_cast<double>(c.rope.high_freq_factor),
                           c.rope.original_max_seq);
    }
    if (c.rope.scaling == RopeScaling::kYarn) HEADWAY_RETURN_IF_ERROR(validate_yarn(c.rope));
    if (c.rope.scaling == RopeScaling::kDynamic && (c.rope.original_max_seq == 0 || rope_pair_count(c.rope, hd) < 2)) {
      return Status::error(Code::kInvalidArgument,
                           "rope_scaling dynamic needs a positive max_position_embeddings and at least 4 rotary dims");
    }
    if (c.rope.scaling == RopeScaling::kProportional &&
        (c.rope.rotated_pairs == 0 || c.rope.rotated_pairs > rope_pair_count(c.rope, hd))) {
      return Status::error(Code::kInvalidArgument,
                           "proportional RoPE rotates %u pairs; head_dim %u has %u (partial_rotary_factor times "
                           "head_dim / 2, at least 1)",
                           c.rope.rotated_pairs, hd, rope_pair_count(c.rope, hd));
    }
  }
  if (c.rope.style != RopeStyle::kNone && c.rope.scaling == RopeScaling::kLongRope) {
    HEADWAY_RETURN_IF_ERROR(validate_longrope(c.rope, rope_pair_count(c.rope, hd)));
  }
  if (c.window > c.max_seq) {
    return Status::error(Code::kInvalidArgument,
                         "sliding_window %u is larger than max_position_embeddings %u: no sequence is "
                         "long enough to need it; drop the window or raise the context",
                         c.window, c.max_seq);
  }
  HEADWAY_RETURN_IF_ERROR(validate_layer_kinds(c));
  if (c.linear_layers_before(c.n_layers) != 0) HEADWAY_RETURN_IF_ERROR(validate_gated_delta(c));
  if (c.sink_tokens != 0 && c.sink_tokens >= c.window) {
    return Status::error(Code::kInvalidArgument,
                         c.window == 0 ? "sink_tokens %u needs a sliding window (sliding_window is %u): sink tokens "
                                         "keep the first positions visible through it"
                                       : "sink_tokens %u must be less than sliding_window %u",
                         c.sink_tokens, c.window);
  }
  if (c.qk_norm_across_heads && !c.qk_norm) {
    return Status::error(Code::kInvalidArgument, "qk_norm_across_heads needs qk_norm (q/k norms to span the heads)");
  }
  if (c.window_symmetric && (c.causal || c.window == 0)) {
    return Status::error(Code::kInvalidArgument,
                         "window_symmetric needs a bidirectional model with a sliding window (causal %s, "
                         "sliding_window %u): it bounds the window from above as well",
                         c.causal ? "true" : "false", c.window);
  }
  if (c.alibi && (!finite(c.alibi_max_bias) || c.alibi_max_bias <= 0.0f)) {
    return Status::error(Code::kInvalidArgument, "alibi_bias_max %g must be a positive number (the standard is 8)",
                         static_cast<double>(c.alibi_max_bias));
  }
  if (!finite(c.softcap) || c.softcap < 0.0f) {
    return Status::error(Code::kInvalidArgument, "attn_logit_softcapping %g must be 0 (off) or positive",
                         static_cast<double>(c.softcap));
  }
  if (!finite(c.query_pre_attn_scalar) || c.query_pre_attn_scalar < 0.0f) {
    return Status::error(Code::kInvalidArgument, "query_pre_attn_scalar %g must be 0 (use head_dim) or positive",
                         static_cast<double>(c.query_pre_attn_scalar));
  }
  if (!finite(c.scale) || c.scale < 0.0f) {
    return Status::error(Code::kInvalidArgument, "scale %g must be 0 (default) or positive",
                         static_cast<double>(c.scale));
  }
  if (!dtype_stores_kv(c.kv_dtype)) {
    return Status::error(Code::kInvalidArgument, "kv dtype %s (%u) is not one of %s", dtype_name(c.kv_dtype),
                         static_cast<unsigned>(c.kv_dtype), kKvDTypeNames);
  }
  HEADWAY_RETURN_IF_ERROR(validate_kv_rotation(c));
  // Gemma 4: the full layers' own head shape passes the same rules.
  if (c.full_layers_shaped() && c.is_mla()) {
    return Status::error(Code::kInvalidArgument,
                         "full_head_dim %u / full_kv_heads %u with MLA (kv_lora_rank %u): its layers share one latent "
                         "row shape",
                         c.layers.full_head_dim, c.layers.full_kv_heads, c.mla.kv_lora_rank);
  }
  if (c.full_layers_shaped()) HEADWAY_RETURN_IF_ERROR(validate(c.full_shape()));
  return validate_model(c);
}

Status validate_layer(const Config& c, uint32_t i) {
  if (i >= c.n_layers) {
    return Status::error(Code::kOutOfRange, "layer %u is past the config's %u layer%s (num_hidden_layers)", i,
                         c.n_layers, c.n_layers == 1 ? "" : "s");
  }
  if (c.layer_shares_kv(i)) HEADWAY_RETURN_IF_ERROR(validate_shared_kv(c));
  return validate(c.layer_with_owner(i));
}

}  // namespace headway
