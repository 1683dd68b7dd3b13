// headway plan: check a config and print its head layout and memory plan.
#include <cstdio>
#include <string>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "examples/cli/config_source.hpp"
#include "examples/cli/plan_layers.hpp"
#include "headway/plan.hpp"
#include "headway/tools/plan_json.hpp"

namespace headway::cli {
namespace {

// Multi-head latent attention: the model's head sizes, and the cache row against what the
// expanded heads would hold.
void print_mla(const Plan& p) {
  const Config& c = p.config;
  const MlaShape& m = c.mla;
  const uint64_t latent = uint64_t{m.kv_lora_rank} + m.qk_rope_head_dim;
  const uint64_t expanded = uint64_t{c.n_heads} * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim);
  char q_lora[32] = "full-rank q";
  if (m.q_lora_rank) std::snprintf(q_lora, sizeof(q_lora), "q_lora_rank %u", m.q_lora_rank);
  std::printf(
      "mla         latent rank %u, q head_dim %u (nope %u + rope %u), v head_dim %u, %s; a token's cache row "
      "is %llu values (latent + rope key, K and V at once), where expanded heads would hold %u x (%u + %u) = "
      "%llu (%.1fx)\n",
      m.kv_lora_rank, m.qk_nope_head_dim + m.qk_rope_head_dim, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim,
      q_lora, static_cast<unsigned long long>(latent), c.n_heads, m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim,
      static_cast<unsigned long long>(expanded), static_cast<double>(expanded) / static_cast<double>(latent));
}

// Gated DeltaNet: which layers, their heads, and the fixed state each keeps in place of a cache.
void print_gated_delta(const Plan& p) {
  const Config& c = p.config;
  const GatedDeltaShape& g = c.gated_delta;
  uint32_t first = 0;
  while (first < c.n_layers && !c.layer_is_linear(first)) ++first;
  std::printf(
      "linear      %u of %u layers (layer %u first) are Gated DeltaNet: %u key heads of %u, %u value heads of %u, "
      "conv kernel %u; each keeps a state of %u x %u x %u f32 instead of a KV cache (%s a layer, whatever the "
      "context)\n",
      p.linear_layers, c.n_layers, first, g.key_heads, g.key_head_dim, g.value_heads, g.value_head_dim, g.conv_kernel,
      g.value_heads, g.key_head_dim, g.value_head_dim, human_bytes(p.linear_state_bytes_per_layer).c_str());
}

// Gemma 4's full layers' own head shape, and the layers that read an earlier layer's cache.
void print_layer_shapes(const Plan& p) {
  const Config& c = p.config;
  if (c.full_layers_shaped()) {
    uint32_t full = 0;
    while (full + 1 < c.n_layers && c.layer_slides(full)) ++full;
    const Plan f = layer_plan(p, full);
    std::printf("full layers head_dim %u, %u kv heads (group %u)%s: q %u, k %u; the sliding layers' shape is above\n",
                f.head_dim, f.config.kv_heads(), f.group_size, f.config.k_eq_v ? ", V from K (no Wv)" : "", f.q_width,
                f.kv_width);
  }
  if (p.kv_shared_layers) {
    const uint32_t first = c.first_kv_shared_layer();
    std::printf(
        "shared kv   layers %u to %u (%u) have no K/V projections and read the cache of the last earlier layer of "
        "their kind: %u of %u layers hold a cache, %s less at this context\n",
        first, c.n_layers - 1, p.kv_shared_layers, c.n_layers - p.kv_shared_layers - p.linear_layers, c.n_layers,
        human_bytes(p.kv_shared_saved_bytes).c_str());
  }
}

// attention_only: why the config's model part is not planned (empty: it is, or it has none).
void print_table(const Plan& p, const std::string& attention_only) {
  const Config& c = p.config;
  std::printf("model %s\n\n", c.name);
  std::printf("attention   %s: %u query heads, %u kv heads (group %u), head_dim %u%s\n", attention_kind_name(p),
              c.n_heads, c.kv_heads(), p.group_size, p.head_dim, c.head_dim ? " (explicit)" : "");
  char offset[48] = "";
  if (c.qk_norm && c.qk_norm_offset != 0.0f) {
    std::snprintf(offset, sizeof(offset), " (weights + %g)", static_cast<double>(c.qk_norm_offset));
  }
  std::printf("widths      d_model %u -> q %u%s, k %u, v %u (fused qkv row %u floats)%s%s\n", c.d_model, p.q_width,
              c.output_gate ? " and its gate" : "", p.kv_width, p.kv_width, p.qkv_width,
              !c.qk_norm               ? ""
              : c.qk_norm_across_heads ? ", q and k RMS-normed across their heads"
                                       : ", q and k RMS-normed per head",
              offset);
  if (c.v_norm || c.k_eq_v) {
    std::printf("values      %s%s\n", c.k_eq_v ? "K's projection (no Wv)" : "Wv's projection",
                c.v_norm ? ", RMS-normed per head without a weight" : "");
  }
  if (c.output_gate) {
    std::printf("gate        attention output times sigmoid(gate) before Wo (each head's q then gate rows in Wq)\n");
  }
  if (c.is_mla()) print_mla(p);
  if (p.linear_layers) print_gated_delta(p);
  print_layer_shapes(p);
  std::printf("kernel      %s\n", kernel_name(p.kernel));
  std::printf("masking     %s", c.causal ? "causal" : "bidirectional");
  if (p.sliding_layers) std::printf(", %ssliding window %u", c.window_symmetric ? "symmetric " : "", c.window);
  if (p.sliding_layers && p.sliding_layers != c.n_layers) {
    std::printf(" (on %u of %u layers)", p.sliding_layers, c.n_layers);
  }
  if (p.sliding_layers && c.sink_tokens) std::printf(", %u sink tokens", c.sink_tokens);
  if (c.softcap > 0) std::printf(", softcap %g", static_cast<double>(c.softcap));
  std::printf(", scale %.6f\n", static_cast<double>(c.logit_scale()));
  if (c.alibi) {
    std::printf("positions   ALiBi, standard slopes (max bias %g)%s, no RoPE\n", static_cast<double>(c.alibi_max_bias),
                c.alibi_times_scale ? " times the logit scale" : "");
  } else if (c.rope.style == RopeStyle::kNone) {
    std::printf("positions   no RoPE\n");
  } else {
    std::printf("rope        %s, theta %g, %u of %u dims rotated", rope_style_name(c.rope.style),
                static_cast<double>(c.rope.theta), c.rotary_dims(), p.head_dim);
    if (c.rope.scaling != RopeScaling::kNone) {
      std::printf(", scaling %s (factor %g", rope_scaling_name(c.rope.scaling), static_cast<double>(c.rope.factor));
      if (c.rope.scaling == RopeScaling::kLongRope) {
        std::printf(", short factors while a call ends within %u positions, long past them", c.rope.original_max_seq);
      } else if (c.rope.scaling == RopeScaling::kLlama3 || c.rope.scaling == RopeScaling::kYarn) {
        std::printf(", original context %u", c.rope.original_max_seq);
      } else if (c.rope.scaling == RopeScaling::kProportional) {
        std::printf(", %u pairs across the head rotated, the rest kept", c.rope.rotated_pairs);
      }
      std::printf(")");
    }
    std::printf("\n");
  }
  std::printf("context     %u tokens, %u layers, up to %u tokens per call, %u thread%s\n\n", c.max_seq, c.n_layers,
              p.max_tokens, p.options.threads, p.options.threads == 1 ? "" : "s");

  if (!attention_only.empty()) std::printf("model part  not planned, attention only: %s\n\n", attention_only.c_str());
  std::printf("memory plan (arena regions, each 64-byte aligned)\n");
  const bool shaped = c.full_layers_shaped();
  const char* weights_note = p.weights_region_bytes ? ""
                             : p.packed_bytes       ? " (packed by XNNPACK below)"
                                                    : " (borrowed, not in the arena)";
  char linear_slot[64] = "";
  if (p.linear_layers) {
    std::snprintf(linear_slot, sizeof(linear_slot), " (attention), %s per Gated DeltaNet layer",
                  human_bytes(p.linear_weight_bytes_per_layer).c_str());
  }
  std::printf("  weights      %12s  %s%s per layer%s, %s%s\n", human_bytes(p.weights_region_bytes).c_str(),
              shaped || p.kv_shared_layers ? "up to " : "", human_bytes(p.weight_bytes_per_layer).c_str(), linear_slot,
              dtype_name(p.options.weight_dtype), weights_note);
  std::printf("  kv cache     %12s  %s per token, %s per %slayer (%u rows, %s%s)\n",
              human_bytes(p.kv_cache_bytes).c_str(), human_bytes(p.kv_bytes_per_token).c_str(),
              human_bytes(p.kv_bytes_per_layer).c_str(),
              p.sliding_layers == 0 || p.sliding_layers == c.n_layers ? "" : "full ", p.cache_rows,
              dtype_name(c.kv_dtype), c.kv_rotation == KvRotation::kHadamard ? ", Hadamard-rotated rows" : "");
  if (p.linear_layers) {
    std::printf(
        "  linear state %12s  %s per Gated DeltaNet layer (%u layers: state and conv window, f32), fixed: "
        "it does not grow with the context\n",
        human_bytes(p.linear_state_bytes).c_str(), human_bytes(p.linear_state_bytes_per_layer).c_str(),
        p.linear_layers);
  }
  if (p.packed_bytes) {
    std::printf("  packed       %12s  XNNPACK operators, %s per layer (upper bound)\n",
                human_bytes(p.packed_bytes).c_str(), human_bytes(p.packed_bytes_per_layer).c_str());
  }
  std::printf("  activations  %12s  qkv, attention output, block output, residual stream for %u tokens\n",
              human_bytes(p.activation_bytes).c_str(), p.max_tokens);
  std::printf("  scratch      %12s  %s per thread\n", human_bytes(p.scratch_bytes).c_str(),
              human_bytes(p.scratch_bytes_per_thread).c_str());
  if (c.model.vocab_size > 0) {
    std::printf(
        "  model        %12s  embedding %s (%u ids), %s per layer (%s norms: %s, %s MLP %u wide%s), LM head %s\n",
        human_bytes(p.model_weights_bytes).c_str(), human_bytes(model_tensor_bytes(p, ModelTensor::kEmbedding)).c_str(),
        c.model.vocab_size, human_bytes(p.model_layer_bytes).c_str(), norm_kind_name(c.model.norm),
        norm_placement_name(c.model), mlp_kind_name(c.model.mlp), c.model.intermediate_size,
        c.model.gate_up_fused ? ", gate and up one tensor" : "",
        !c.causal                     ? "none (an encoder: hidden states out)"
        : c.model.tie_word_embeddings ? "tied to the embedding"
                                      : human_bytes(model_tensor_bytes(p, ModelTensor::kLmHead)).c_str());
    if (c.causal) {
      std::printf("  model acts   %12s  normed rows, MLP hidden, logits of %u token%s over %u ids, sampler\n",
                  human_bytes(p.model_activation_bytes).c_str(), p.logits_rows, p.logits_rows == 1 ? "" : "s",
                  c.model.vocab_size);
    } else {
      std::printf("  model acts   %12s  normed rows, MLP hidden\n", human_bytes(p.model_activation_bytes).c_str());
    }
  }
  std::printf("  arena total  %12s  (%llu bytes)\n\n", human_bytes(p.arena_bytes).c_str(),
              static_cast<unsigned long long>(p.arena_bytes));

  print_layer_groups(p);
  // Layers of two head shapes (Gemma 4): the first layer's, named.
  const Plan layout = shaped ? layer_plan(p, 0) : p;
  if (shaped) {
    std::printf("head layout of layer 0 (byte offsets: in one token's fused qkv row; in its kv cache)\n");
  } else {
    std::printf("head layout (byte offsets: in one token's fused qkv row; in one %slayer's kv cache)\n",
                p.sliding_layers == 0 || p.sliding_layers == c.n_layers ? "" : "full ");
  }
  std::printf("  %6s %7s %9s %9s %9s %12s %12s\n", "q head", "kv head", "q", "k", "v", "cache K", "cache V");
  for (uint32_t h = 0; h < c.n_heads; ++h) {
    const HeadLayout l = layout.head(h);
    std::printf("  %6u %7u %9llu %9llu %9llu %12llu %12llu\n", l.q_head, l.kv_head,
                static_cast<unsigned long long>(l.qkv_q_offset), static_cast<unsigned long long>(l.qkv_k_offset),
                static_cast<unsigned long long>(l.qkv_v_offset), static_cast<unsigned long long>(l.cache_k_offset),
                static_cast<unsigned long long>(l.cache_v_offset));
  }
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  Flags flags("plan", argc, argv);
  ConfigSource source;
  bool json = false;
  bool kv_dtype_set = false, kv_rotation_set = false;
  DType kv_dtype = DType::kF16;
  KvRotation kv_rotation = KvRotation::kNone;
  PlanOptions options;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (source.take(&flags, &s)) {
      // --preset, --config, --gguf or --spec: the value is in source
    } else if (f == "--json" && !flags.has_inline_value()) {
      json = true;
    } else if (f == "--threads") {
      s = flags.value_u32(&options.threads, 1, 256);
    } else if (f == "--max-tokens") {
      s = flags.value_u32(&options.max_tokens, 1, 1u << 30);
    } else if (f == "--kv-dtype") {
      s = flags.value_kv_dtype(&kv_dtype), kv_dtype_set = true;
    } else if (f == "--kv-rotate") {
      s = flags.value_kv_rotation(&kv_rotation), kv_rotation_set = true;
    } else if (f == "--weight-dtype") {
      s = flags.value_dtype(&options.weight_dtype);
    } else if (f == "--projection") {
      const char* v = nullptr;
      s = flags.value(&v);
      if (s.ok() && !parse_projection(v, &options.projection)) {
        s = Status::error(Code::kInvalidArgument, "--projection '%s': expected highway or xnnpack", v);
      }
    } else {
      s = flags.unknown();
    }
    if (!s.ok()) return report("plan", s);
  }
  std::string attention_only;
  Result<Config> config = source.load_model("", &attention_only);
  if (!config.ok()) return report("plan", config.status());
  Config c = config.value();
  if (kv_dtype_set) c.kv_dtype = kv_dtype;
  if (kv_rotation_set) c.kv_rotation = kv_rotation;

  const Result<Plan> plan = make_plan(c, options);
  if (!plan.ok()) return report("plan", plan.status());
  if (json) {
    std::printf("%s\n", plan_json(plan.value()).c_str());
  } else {
    print_table(plan.value(), attention_only);
  }
  return kExitOk;
}

}  // namespace headway::cli
