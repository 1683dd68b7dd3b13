#include "runtime/formats/gguf_gemma4.hpp"

#include "runtime/formats/layer_kind_rules.hpp"

namespace headway::formats {

Status read_swa_layers(const gguf::Reader& p, const gguf::Kv& pattern, const char* arch, uint32_t blocks, Config* cfg) {
  if (blocks > kMaxConfigLayers) {
    return Status::error(Code::kUnsupported,
                         "%s: %s.block_count is %u; %s.attention.sliding_window_pattern is a per-layer list, and "
                         "headway holds such lists of up to %u layers",
                         p.source, arch, blocks, arch, kMaxConfigLayers);
  }
  LayerKinds& k = cfg->layers;
  HEADWAY_RETURN_IF_ERROR(gguf::read_bools(p, pattern, blocks, &k.sliding));
  k.sliding_pattern = 0;
  bool all_alike = true;
  for (uint32_t i = 1; i < cfg->n_layers; ++i) all_alike = all_alike && k.sliding.get(i) == k.sliding.get(0);
  if (!all_alike) {
    k.sliding.count = cfg->n_layers;
  } else {
    if (!k.sliding.get(0)) cfg->window = 0;  // every layer full: the window is unused
    k.sliding = LayerBits{};
  }
  return Status();
}

// As Gemma4Model's set_gguf_parameters writes them: key_length (and value_length) the full
// layers' head (global_head_dim), key_length_swa the sliding layers' (head_dim); head_count_kv
// one count, or one a layer where config.json names num_global_key_value_heads (the full
// layers' entries); rope.dimension_count the whole full head, whose proportional RoPE a
// rope_freqs tensor masks to its first pairs (factor 1, then 1e30: Gemma4TextConfig's quarter
// here, WeightFile::gguf_config counts the tensor's); rope.dimension_count_swa the sliding head
// (partial_rotary_factor 1: all of it). llama.cpp's graph RMS-norms each head's v without a
// weight and scales the logits by 1 (f_attention_scale).
Status read_gemma4(const gguf::Reader& p, const Gemma4Keys& keys, const char* arch, uint32_t blocks, Config* cfg) {
  cfg->v_norm = true;
  cfg->scale = 1.0f;
  LayerKinds& k = cfg->layers;
  k.full_head_dim = cfg->head_dim;  // key_length
  if (!keys.key_length_swa.present()) {
    return Status::error(Code::kNotFound, "%s: no %s.attention.key_length_swa (architecture %s)", p.source, arch, arch);
  }
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, keys.key_length_swa, 1, &cfg->head_dim));
  const struct {
    const gguf::Kv& kv;
    const char* suffix;
  } same_as_swa[] = {{keys.value_length_swa, "attention.value_length_swa"},
                     {keys.rope_dims_swa, "rope.dimension_count_swa"}};
  for (const auto& [kv, suffix] : same_as_swa) {
    uint32_t n = cfg->head_dim;
    if (kv.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, kv, 1, &n));
    if (n != cfg->head_dim) {
      return Status::error(Code::kUnsupported,
                           "%s: %s.%s is %u, attention.key_length_swa %u: headway's sliding layers hold and rotate "
                           "values across the whole key head",
                           p.source, arch, suffix, n, cfg->head_dim);
    }
  }
  if (keys.shared_kv_layers.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, keys.shared_kv_layers, 0, &k.kv_shared_layers));
  }
  if (keys.head_count_kv.present() && keys.head_count_kv.type == gguf::kArray) {
    // Each kind's layers alike: the sliding ones' into n_kv_heads, the full ones' into full_kv_heads.
    bool seen[2] = {false, false};
    for (uint32_t i = 0; i < cfg->n_layers; ++i) {
      const bool slides = cfg->layer_slides(i);
      uint32_t* kind = slides ? &cfg->n_kv_heads : &k.full_kv_heads;
      uint32_t heads = 0;
      HEADWAY_RETURN_IF_ERROR(gguf::read_count_at(p, keys.head_count_kv, i, blocks, 1, &heads));
      if (seen[slides] && heads != *kind) {
        return Status::error(Code::kUnsupported,
                             "%s: %s.attention.head_count_kv[%u] is %u where the earlier %s layers have %u; headway "
                             "plans one kv head count for each kind of layer",
                             p.source, arch, i, heads, slides ? "sliding" : "full", *kind);
      }
      *kind = heads;
      seen[slides] = true;
    }
  }
  RopeConfig& rope = cfg->rope;
  if (rope.rotary_dim != 0) {  // the generic read keeps rope.dimension_count where it is not the head
    return Status::error(Code::kUnsupported,
                         "%s: %s.rope.dimension_count is %u, attention.key_length %u: Gemma 4's full layers rotate "
                         "across the whole head (proportional RoPE)",
                         p.source, arch, rope.rotary_dim, k.full_head_dim);
  }
  rope.scaling = RopeScaling::kProportional;
  rope.rotary_dim = 0;
  rope.rotated_pairs = static_cast<uint32_t>(kGemma4RotaryFraction * k.full_head_dim / 2);
  return Status();
}

Status read_proportional_factors(const float* factors, uint32_t n, const char* source, Config* cfg) {
  RopeConfig& rope = cfg->rope;
  const uint32_t head = cfg->layers.full_head_dim ? cfg->layers.full_head_dim : cfg->head_size();
  if (n != head / 2) {
    return Status::error(Code::kInvalidArgument,
                         "%s: tensor 'rope_freqs.weight' has %u factors, expected %u (one a pair of the full head of "
                         "%u)",
                         source, n, head / 2, head);
  }
  uint32_t rotated = 0;
  while (rotated < n && factors[rotated] == 1.0f) ++rotated;
  for (uint32_t i = rotated; i < n; ++i) {
    if (!(factors[i] >= kUnrotatedFactor)) {
      return Status::error(Code::kUnsupported,
                           "%s: tensor 'rope_freqs.weight' factor %u is %g: proportional RoPE's factors are 1 for the "
                           "rotated pairs (%u here), then at least 1e30 for the rest",
                           source, i, static_cast<double>(factors[i]), rotated);
    }
  }
  rope.rotated_pairs = rotated;
  return Status();
}

}  // namespace headway::formats
