#include "runtime/formats/hf_layer_kinds.hpp"

#include "runtime/formats/layer_kind_rules.hpp"

namespace headway::formats {
namespace {

using json = nlohmann::json;

Status list_fits(const Where& w, const char* key, const Config& cfg) {
  if (cfg.n_layers <= kMaxConfigLayers) return Status();
  return Status::error(Code::kUnsupported, "%s: %s%s lists %u layers; headway holds per-layer lists of up to %u",
                       w.source, w.prefix, key, cfg.n_layers, kMaxConfigLayers);
}

Status array_of_layers(const Where& w, const char* key, const json& v, const Config& cfg) {
  if (!v.is_array()) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s (%s), expected an array with one entry per layer",
                         w.source, w.prefix, key, shown(v).c_str(), kind_of(v));
  }
  if (v.size() != cfg.n_layers) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s has %zu entries, num_hidden_layers is %u", w.source,
                         w.prefix, key, v.size(), cfg.n_layers);
  }
  return list_fits(w, key, cfg);
}

// Keeps a list only where its layers differ: all alike says as much with no list.
bool all_equal(const LayerBits& bits, uint32_t n) {
  for (uint32_t i = 1; i < n; ++i) {
    if (bits.get(i) != bits.get(0)) return false;
  }
  return true;
}

Status read_layer_types(const Where& w, const json& v, Config* cfg) {
  HEADWAY_RETURN_IF_ERROR(array_of_layers(w, "layer_types", v, *cfg));
  LayerKinds& k = cfg->layers;
  for (uint32_t i = 0; i < cfg->n_layers; ++i) {
    const json& e = v[i];
    const std::string* s = e.is_string() ? e.get_ptr<const json::string_t*>() : nullptr;
    if (s && *s == "chunked_attention") {
      return Status::error(Code::kUnsupported,
                           "%s: %slayer_types[%u] is \"chunked_attention\" (attention within fixed chunks, as Llama "
                           "4): not supported; headway plans full_attention and sliding_attention layers",
                           w.source, w.prefix, i);
    }
    if (!s || (*s != "sliding_attention" && *s != "full_attention" && *s != "linear_attention")) {
      return Status::error(Code::kInvalidArgument,
                           "%s: %slayer_types[%u] is %s, expected \"sliding_attention\", \"full_attention\" or "
                           "\"linear_attention\"",
                           w.source, w.prefix, i, shown(e).c_str());
    }
    k.sliding.set(i, *s == "sliding_attention");
    k.linear.set(i, *s == "linear_attention");
  }
  if (!all_equal(k.linear, cfg->n_layers) || k.linear.get(0)) k.linear.count = cfg->n_layers;
  if (!all_equal(k.sliding, cfg->n_layers)) {
    k.sliding.count = cfg->n_layers;
  } else if (!k.sliding.get(0)) {
    cfg->window = 0;  // every layer full: the window is unused
  }
  return Status();
}

// Qwen2's use_sliding_window: which layers take the window, by max_window_layers (m). Qwen2Config
// (and Qwen3Config, the VL text configs): layers at or past m slide; Qwen2MoeConfig: the even
// layers below m; Qwen3MoeConfig has no m: every layer slides. Without m, the Qwen configs use
// their default (default_max_window_layers), other model types slide everywhere.
Status read_max_window_layers(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  bool use_window = false;
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "use_sliding_window", &use_window));
  if (!use_window || cfg->window == 0 || model_type == "qwen3_moe") return Status();
  const bool moe = model_type == "qwen2_moe";
  uint32_t m = default_max_window_layers(model_type);
  if (const json* first = lookup(obj, "max_window_layers")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "max_window_layers", *first, 0, &m));
  } else if (m == 0) {
    return Status();
  }
  if (moe && m >= cfg->n_layers) {
    cfg->layers.sliding_pattern = 2;  // every even layer
    return Status();
  }
  if ((moe && m == 0) || (!moe && m >= cfg->n_layers)) {
    cfg->window = 0;  // no layer takes the window: all full
    return Status();
  }
  if (!moe && m == 0) return Status();  // every layer slides
  HEADWAY_RETURN_IF_ERROR(list_fits(w, "max_window_layers", *cfg));
  for (uint32_t i = 0; i < cfg->n_layers; ++i) cfg->layers.sliding.set(i, moe ? i % 2 == 0 && i < m : i >= m);
  cfg->layers.sliding.count = cfg->n_layers;
  return Status();
}

// Qwen3.5's and Qwen3-Next's layers without a layer_types list: linear but every
// full_attention_interval-th.
Status read_full_attention_interval(const Where& w, const json& obj, Config* cfg) {
  uint32_t every = kGatedQwenFullInterval;
  if (const json* v = lookup(obj, "full_attention_interval")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "full_attention_interval", *v, 1, &every));
  }
  if (every == 1) return Status();  // every layer full
  HEADWAY_RETURN_IF_ERROR(list_fits(w, "full_attention_interval", *cfg));
  for (uint32_t i = 0; i < cfg->n_layers; ++i) cfg->layers.linear.set(i, (i + 1) % every != 0);
  cfg->layers.linear.count = cfg->n_layers;
  return Status();
}

// Which layers slide (and which are linear attention), from the first of these the file has.
Status read_sliding_layers(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (const json* v = lookup(obj, "layer_types")) return read_layer_types(w, *v, cfg);
  if (is_gated_qwen(model_type)) return read_full_attention_interval(w, obj, cfg);
  const char* key = "sliding_window_pattern";
  const json* pattern = lookup(obj, key);
  if (!pattern) pattern = lookup(obj, key = "_sliding_window_pattern");
  if (pattern) return read_count(w, key, *pattern, 1, &cfg->layers.sliding_pattern);
  if (model_type == "gemma2") {
    cfg->layers.sliding_pattern = kGemma2SlidingPattern;
    return Status();
  }
  if (is_gemma3(model_type) || is_gemma3n(model_type) || is_gemma4(model_type)) {
    cfg->layers.sliding_pattern = kGemma3SlidingPattern;
    return Status();
  }
  if (model_type == "modernbert") {  // ModernBertConfig: layer i is global when i % N == 0
    uint32_t every = kModernBertGlobalEvery;
    if (const json* v = lookup(obj, "global_attn_every_n_layers")) {
      HEADWAY_RETURN_IF_ERROR(read_count(w, "global_attn_every_n_layers", *v, 1, &every));
    }
    if (every == 1) {
      cfg->window = 0;  // every layer global
      return Status();
    }
    HEADWAY_RETURN_IF_ERROR(list_fits(w, "global_attn_every_n_layers", *cfg));
    for (uint32_t i = 0; i < cfg->n_layers; ++i) cfg->layers.sliding.set(i, i % every != 0);
    cfg->layers.sliding.count = cfg->n_layers;
    return Status();
  }
  return read_max_window_layers(w, obj, model_type, cfg);
}

// Which layers rotate: SmolLM3's no_rope_layers (1 = RoPE, 0 = NoPE) or its interval; Cohere2's
// sliding layers only.
Status read_rope_layers(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (cfg->rope.style == RopeStyle::kNone) return Status();
  LayerKinds& k = cfg->layers;
  if (const json* v = lookup(obj, "no_rope_layers")) {
    HEADWAY_RETURN_IF_ERROR(array_of_layers(w, "no_rope_layers", *v, *cfg));
    for (uint32_t i = 0; i < cfg->n_layers; ++i) {
      const json& e = (*v)[i];
      const bool bit = e.is_number() && (as_double(e) == 0.0 || as_double(e) == 1.0);
      if (!bit) {
        return Status::error(Code::kInvalidArgument, "%s: %sno_rope_layers[%u] is %s, expected 1 (RoPE) or 0 (no RoPE)",
                             w.source, w.prefix, i, shown(e).c_str());
      }
      k.rope.set(i, as_double(e) == 1.0);
    }
    if (!all_equal(k.rope, cfg->n_layers) || !k.rope.get(0)) k.rope.count = cfg->n_layers;
    return Status();
  }
  if (const json* v = lookup(obj, "no_rope_layer_interval")) {
    return read_count(w, "no_rope_layer_interval", *v, 1, &k.nope_interval);
  }
  if (model_type == "cohere2") {
    HEADWAY_RETURN_IF_ERROR(list_fits(w, "layer_types", *cfg));
    rotate_sliding_layers_only(cfg);
  }
  return Status();
}

// The linear layers' shape (Gated DeltaNet): the linear_* keys, each defaulting as Qwen3.5's and
// Qwen3-Next's config classes do.
Status read_gated_delta(const Where& w, const json& obj, Config* cfg) {
  GatedDeltaShape& g = cfg->gated_delta;
  g = kGatedQwenDeltaNet;
  const struct {
    const char* key;
    uint32_t* out;
  } keys[] = {{"linear_num_key_heads", &g.key_heads},
              {"linear_num_value_heads", &g.value_heads},
              {"linear_key_head_dim", &g.key_head_dim},
              {"linear_value_head_dim", &g.value_head_dim},
              {"linear_conv_kernel_dim", &g.conv_kernel}};
  for (const auto& k : keys) {
    if (const json* v = lookup(obj, k.key)) HEADWAY_RETURN_IF_ERROR(read_count(w, k.key, *v, 1, k.out));
  }
  return Status();
}

}  // namespace

Status read_gemma_per_layer(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (!is_gemma3n(model_type) && !is_gemma4(model_type)) return Status();
  cfg->qk_norm = true;
  cfg->v_norm = true;
  cfg->scale = 1.0f;
  if (const json* v = lookup(obj, "num_kv_shared_layers")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "num_kv_shared_layers", *v, 0, &cfg->layers.kv_shared_layers));
  }
  if (const json* v = lookup(obj, "use_bidirectional_attention"); v && v->is_string() && *v == "all") {
    return Status::error(Code::kUnsupported,
                         "%s: %suse_bidirectional_attention \"all\": headway runs Gemma's text attention causal",
                         w.source, w.prefix);
  }
  if (!is_gemma4(model_type)) return Status();
  if (lookup(obj, "head_dim") == nullptr) cfg->head_dim = kGemma4HeadDim;
  cfg->layers.full_head_dim = kGemma4GlobalHeadDim;
  if (const json* v = lookup(obj, "global_head_dim")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "global_head_dim", *v, 1, &cfg->layers.full_head_dim));
  }
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "attention_k_eq_v", &cfg->layers.full_k_eq_v));
  const json* heads = lookup(obj, "num_global_key_value_heads");
  if (cfg->layers.full_k_eq_v && heads != nullptr && !heads->is_null()) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "num_global_key_value_heads", *heads, 1, &cfg->layers.full_kv_heads));
  }
  return Status();
}

const json* rope_parameters(const json& obj, const char* layer_type) {
  const json* p = lookup(obj, "rope_parameters");
  if (p == nullptr || !p->is_object()) return nullptr;
  if (const json* per_type = lookup(*p, layer_type)) return per_type->is_object() ? per_type : nullptr;
  return lookup(*p, "full_attention") || lookup(*p, "sliding_attention") ? nullptr : p;
}

Status read_layer_kinds(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  HEADWAY_RETURN_IF_ERROR(read_sliding_layers(w, obj, model_type, cfg));
  // The sliding layers' base: Gemma 3's rope_local_base_freq, ModernBERT's local_rope_theta, or
  // transformers 5's rope_parameters.sliding_attention.rope_theta where it differs from the full
  // layers'.
  const char* key = "rope_local_base_freq";
  const json* v = lookup(obj, key);
  if (v == nullptr && model_type == "modernbert") v = lookup(obj, key = "local_rope_theta");
  const json* sliding = rope_parameters(obj, "sliding_attention");
  if (v == nullptr && sliding != nullptr) v = lookup(*sliding, key = "rope_theta");
  if (v != nullptr) {
    double theta = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, key, *v, false, &theta));
    set_local_rope_theta(static_cast<float>(theta), cfg);
  } else if (is_gemma3(model_type)) {
    set_local_rope_theta(kGemma3LocalRopeTheta, cfg);  // Gemma3TextConfig's default
  } else if (is_gemma4(model_type)) {
    set_local_rope_theta(kGemma4LocalRopeTheta, cfg);
  } else if (model_type == "modernbert") {
    set_local_rope_theta(kModernBertLocalRopeTheta, cfg);
  }
  HEADWAY_RETURN_IF_ERROR(read_rope_layers(w, obj, model_type, cfg));
  if (model_type == "smollm3" && cfg->window != 0 && lookup(obj, "layer_types") == nullptr) {
    // SmolLM3Config with use_sliding_window: only its NoPE layers slide.
    HEADWAY_RETURN_IF_ERROR(list_fits(w, "no_rope_layers", *cfg));
    for (uint32_t i = 0; i < cfg->n_layers; ++i) cfg->layers.sliding.set(i, !cfg->layer_rotates(i));
    cfg->layers.sliding.count = cfg->n_layers;
    if (all_equal(cfg->layers.sliding, cfg->n_layers)) {
      if (!cfg->layers.sliding.get(0)) cfg->window = 0;  // every layer rotates: none slides
      cfg->layers.sliding = LayerBits{};
    }
  }
  if (model_type == "gpt_oss") cfg->sinks = true;  // GptOssAttention: learned sinks on every layer
  if (cfg->linear_layers_before(cfg->n_layers) != 0) return read_gated_delta(w, obj, cfg);
  return Status();
}

}  // namespace headway::formats
