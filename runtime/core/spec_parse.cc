// The compact spec string. Hand-written on purpose: the core library must parse it on bare metal
// with no allocation and no libc locale (newlib's strtod allocates).
#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"

namespace headway {
namespace {

constexpr uint32_t kMaxToken = 64;

struct Token {
  char key[kMaxToken + 1] = {};
  char value[kMaxConfigLayers + 1] = {};  // kMaxToken, or one character per layer for a list key
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; }

bool equal(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

bool parse_u32(const char* s, uint32_t* out) {
  if (!*s) return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + static_cast<uint64_t>(*s - '0');
    if (v > 0xffffffffull) return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

// [+]digits[.digits][(e|E)[+-]digits]; no sign (every float key is non-negative), no inf/nan.
bool parse_float(const char* s, float* out) {
  double mant = 0;
  int digits = 0, exp10 = 0;
  if (*s == '+') ++s;
  for (; *s >= '0' && *s <= '9'; ++s, ++digits) mant = mant * 10 + (*s - '0');
  if (*s == '.') {
    for (++s; *s >= '0' && *s <= '9'; ++s, ++digits, --exp10) mant = mant * 10 + (*s - '0');
  }
  if (digits == 0) return false;
  if (*s == 'e' || *s == 'E') {
    ++s;
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    int e = 0, edigits = 0;
    for (; *s >= '0' && *s <= '9'; ++s, ++edigits) {
      if (e < 1000) e = e * 10 + (*s - '0');
    }
    if (edigits == 0) return false;
    exp10 += neg ? -e : e;
  }
  if (*s) return false;
  for (; exp10 > 0; --exp10) mant *= 10;
  for (; exp10 < 0; ++exp10) mant /= 10;
  if (mant > 3.4e38) return false;
  *out = static_cast<float>(mant);
  return true;
}

bool parse_bool(const char* s, bool* out) {
  if (equal(s, "1") || equal(s, "true")) return *out = true, true;
  if (equal(s, "0") || equal(s, "false")) return *out = false, true;
  return false;
}

constexpr const char* kKnownKeys =
    "name, d_model, heads, kv_heads, head_dim, ctx, layers, rope, rope_theta, rope_dim, window, softcap, "
    "query_pre_attn_scalar, scale, causal, kv_dtype, kv_rotation, qkv_bias, o_bias, qk_norm, output_gate, v_norm, "
    "k_eq_v, sliding_pattern, nope_interval, rope_local_theta, sinks, layer_types, rope_layers, sink_tokens, alibi, "
    "alibi_max_bias, alibi_times_scale, window_symmetric, kv_shared_layers, full_head_dim, full_kv_heads, "
    "full_k_eq_v, kv_lora_rank, q_lora_rank, qk_nope_head_dim, "
    "qk_rope_head_dim, v_head_dim, linear_layers, linear_key_heads, linear_value_heads, linear_key_head_dim, "
    "linear_value_head_dim, linear_conv_kernel, vocab, ffn, norm, mlp, norm_eps, tie";

// The per-layer list keys: one character per layer, up to kMaxConfigLayers.
bool is_list_key(const char* key) {
  return equal(key, "layer_types") || equal(key, "rope_layers") || equal(key, "linear_layers");
}

// layer_types=sfsf (s sliding, f full), rope_layers=1110 (1 RoPE, 0 none) or linear_layers=1110
// (1 Gated DeltaNet, 0 attention) into `bits`.
Status parse_layer_list(const Token& t, char on, char off, LayerBits* bits) {
  uint32_t n = 0;
  for (; t.value[n]; ++n) {
    if (t.value[n] != on && t.value[n] != off) {
      return Status::error(Code::kInvalidArgument, "spec: %s=%s: character %u is '%c', expected %c or %c", t.key,
                           t.value, n + 1, t.value[n], on, off);
    }
  }
  *bits = LayerBits{};
  for (uint32_t i = 0; i < n; ++i) bits->set(i, t.value[i] == on);
  bits->count = n;
  return Status();
}

Status bad_value(const Token& t, const char* expected) {
  return Status::error(Code::kInvalidArgument, "spec: %s=%s is not %s", t.key, t.value, expected);
}

// A key whose value is a whole number in a field of Obj (Config, or one of its shapes).
template <class Obj>
struct U32Key {
  const char* key;
  uint32_t Obj::*field;
};
// When t's key is one of `keys`: its value parsed into obj's field, *s the outcome, and true.
template <class Obj, size_t N>
bool apply_u32(const Token& t, const U32Key<Obj> (&keys)[N], Obj& obj, Status* s) {
  for (const U32Key<Obj>& k : keys) {
    if (!equal(t.key, k.key)) continue;
    *s = parse_u32(t.value, &(obj.*k.field)) ? Status() : bad_value(t, "a whole number 0..4294967295");
    return true;
  }
  return false;
}

Status apply(const Token& t, Config& c, bool* rope_explicit) {
  static constexpr U32Key<Config> kU32[] = {
      {"d_model", &Config::d_model},     {"heads", &Config::n_heads},
      {"kv_heads", &Config::n_kv_heads}, {"head_dim", &Config::head_dim},
      {"ctx", &Config::max_seq},         {"layers", &Config::n_layers},
      {"window", &Config::window},       {"sink_tokens", &Config::sink_tokens},
  };
  if (equal(t.key, "sliding_pattern") || equal(t.key, "nope_interval")) {
    uint32_t* field = equal(t.key, "sliding_pattern") ? &c.layers.sliding_pattern : &c.layers.nope_interval;
    return parse_u32(t.value, field) && *field > 0 ? Status() : bad_value(t, "a whole number 1..4294967295");
  }
  if (equal(t.key, "rope_local_theta")) {
    return parse_float(t.value, &c.layers.local_rope_theta) ? Status() : bad_value(t, "a non-negative number");
  }
  static constexpr U32Key<MlaShape> kMla[] = {{"kv_lora_rank", &MlaShape::kv_lora_rank},
                                              {"q_lora_rank", &MlaShape::q_lora_rank},
                                              {"qk_nope_head_dim", &MlaShape::qk_nope_head_dim},
                                              {"qk_rope_head_dim", &MlaShape::qk_rope_head_dim},
                                              {"v_head_dim", &MlaShape::v_head_dim}};
  static constexpr U32Key<GatedDeltaShape> kGatedDelta[] = {{"linear_key_heads", &GatedDeltaShape::key_heads},
                                                            {"linear_value_heads", &GatedDeltaShape::value_heads},
                                                            {"linear_key_head_dim", &GatedDeltaShape::key_head_dim},
                                                            {"linear_value_head_dim", &GatedDeltaShape::value_head_dim},
                                                            {"linear_conv_kernel", &GatedDeltaShape::conv_kernel}};
  static constexpr U32Key<LayerKinds> kKinds[] = {{"kv_shared_layers", &LayerKinds::kv_shared_layers},
                                                  {"full_head_dim", &LayerKinds::full_head_dim},
                                                  {"full_kv_heads", &LayerKinds::full_kv_heads}};
  Status parsed;
  if (apply_u32(t, kKinds, c.layers, &parsed)) return parsed;
  if (equal(t.key, "full_k_eq_v")) {
    return parse_bool(t.value, &c.layers.full_k_eq_v) ? Status() : bad_value(t, "0, 1, true or false");
  }
  if (apply_u32(t, kMla, c.mla, &parsed) || apply_u32(t, kGatedDelta, c.gated_delta, &parsed)) return parsed;
  if (equal(t.key, "layer_types")) return parse_layer_list(t, 's', 'f', &c.layers.sliding);
  if (equal(t.key, "rope_layers")) return parse_layer_list(t, '1', '0', &c.layers.rope);
  if (equal(t.key, "linear_layers")) return parse_layer_list(t, '1', '0', &c.layers.linear);
  if (apply_u32(t, kU32, c, &parsed)) return parsed;
  struct FloatKey {
    const char* key;
    float Config::*field;
  };
  static constexpr FloatKey kFloat[] = {{"softcap", &Config::softcap},
                                        {"query_pre_attn_scalar", &Config::query_pre_attn_scalar},
                                        {"scale", &Config::scale},
                                        {"alibi_max_bias", &Config::alibi_max_bias}};
  for (const FloatKey& k : kFloat) {
    if (equal(t.key, k.key))
      return parse_float(t.value, &(c.*k.field)) ? Status() : bad_value(t, "a non-negative number");
  }
  struct BoolKey {
    const char* key;
    bool Config::*field;
  };
  static constexpr BoolKey kBool[] = {{"causal", &Config::causal},
                                      {"qkv_bias", &Config::qkv_bias},
                                      {"o_bias", &Config::o_bias},
                                      {"qk_norm", &Config::qk_norm},
                                      {"output_gate", &Config::output_gate},
                                      {"v_norm", &Config::v_norm},
                                      {"k_eq_v", &Config::k_eq_v},
                                      {"sinks", &Config::sinks},
                                      {"alibi", &Config::alibi},
                                      {"alibi_times_scale", &Config::alibi_times_scale},
                                      {"window_symmetric", &Config::window_symmetric}};
  for (const BoolKey& k : kBool) {
    if (equal(t.key, k.key)) return parse_bool(t.value, &(c.*k.field)) ? Status() : bad_value(t, "0, 1, true or false");
  }
  if (equal(t.key, "name")) {
    c.set_name(t.value);
    return Status();
  }
  if (equal(t.key, "rope_theta")) {
    if (!parse_float(t.value, &c.rope.theta)) return bad_value(t, "a positive number");
    if (!*rope_explicit) c.rope.style = RopeStyle::kNeox;
    return Status();
  }
  if (equal(t.key, "rope_dim")) {
    if (!parse_u32(t.value, &c.rope.rotary_dim)) return bad_value(t, "a whole number");
    if (!*rope_explicit) c.rope.style = RopeStyle::kNeox;
    return Status();
  }
  if (equal(t.key, "rope")) {
    *rope_explicit = true;
    if (equal(t.value, "none")) c.rope.style = RopeStyle::kNone;
    else if (equal(t.value, "neox")) c.rope.style = RopeStyle::kNeox;
    else if (equal(t.value, "gptj")) c.rope.style = RopeStyle::kGptj;
    else return bad_value(t, "one of none, neox, gptj");
    return Status();
  }
  // The model around the blocks (ModelConfig): a pre-norm decoder of RMSNorm and SwiGLU by default.
  if (equal(t.key, "vocab") || equal(t.key, "ffn")) {
    uint32_t* field = equal(t.key, "vocab") ? &c.model.vocab_size : &c.model.intermediate_size;
    if (!parse_u32(t.value, field)) return bad_value(t, "a whole number 0..4294967295");
    if (c.model.norm == NormKind::kNone) c.model.norm = NormKind::kRms;
    if (c.model.mlp == MlpKind::kNone) c.model.mlp = MlpKind::kSwiGlu;
    return Status();
  }
  if (equal(t.key, "norm")) {
    if (equal(t.value, "rms")) c.model.norm = NormKind::kRms;
    else if (equal(t.value, "layer")) c.model.norm = NormKind::kLayer;
    else return bad_value(t, "one of rms, layer");
    return Status();
  }
  if (equal(t.key, "mlp")) {
    if (equal(t.value, "swiglu")) c.model.mlp = MlpKind::kSwiGlu;
    else if (equal(t.value, "gelu")) c.model.mlp = MlpKind::kGelu;
    else if (equal(t.value, "geglu")) c.model.mlp = MlpKind::kGeGlu;
    else return bad_value(t, "one of swiglu, geglu, gelu");
    return Status();
  }
  if (equal(t.key, "norm_eps")) {
    return parse_float(t.value, &c.model.norm_eps) ? Status() : bad_value(t, "a positive number");
  }
  if (equal(t.key, "tie")) {
    return parse_bool(t.value, &c.model.tie_word_embeddings) ? Status() : bad_value(t, "0, 1, true or false");
  }
  if (equal(t.key, "kv_dtype")) {
    DType kv{};
    if (!dtype_from_name(t.value, &kv) || !dtype_stores_kv(kv)) {
      return Status::error(Code::kInvalidArgument, "spec: %s=%s is not one of %s", t.key, t.value, kKvDTypeNames);
    }
    c.kv_dtype = kv;
    return Status();
  }
  if (equal(t.key, "kv_rotation")) {
    if (!kv_rotation_from_name(t.value, &c.kv_rotation)) {
      return Status::error(Code::kInvalidArgument, "spec: %s=%s is not one of %s", t.key, t.value, kKvRotationNames);
    }
    return Status();
  }
  return Status::error(Code::kInvalidArgument, "spec: unknown key '%s' (known keys: %s)", t.key, kKnownKeys);
}

}  // namespace

Result<Config> parse_spec(const char* spec) {
  if (spec == nullptr) return Status::error(Code::kInvalidArgument, "spec: no text given");
  Config c;
  c.set_name("spec");
  bool rope_explicit = false;
  bool any = false;
  const char* p = spec;
  while (true) {
    while (is_space(*p)) ++p;
    if (!*p) break;
    Token t;
    uint32_t n = 0;
    for (; *p && *p != '=' && !is_space(*p); ++p) {
      if (n == kMaxToken)
        return Status::error(Code::kInvalidArgument, "spec: a key longer than %u characters", kMaxToken);
      t.key[n++] = *p;
    }
    if (*p != '=') {
      return Status::error(Code::kInvalidArgument, "spec: '%s' has no value: write %s=VALUE", t.key, t.key);
    }
    ++p;
    n = 0;
    const uint32_t limit = is_list_key(t.key) ? kMaxConfigLayers : kMaxToken;
    for (; *p && !is_space(*p); ++p) {
      if (n == limit) {
        return Status::error(Code::kInvalidArgument, "spec: the value of %s is longer than %u characters", t.key,
                             limit);
      }
      t.value[n++] = *p;
    }
    if (n == 0) return Status::error(Code::kInvalidArgument, "spec: %s= has an empty value", t.key);
    HEADWAY_RETURN_IF_ERROR(apply(t, c, &rope_explicit));
    any = true;
  }
  if (!any)
    return Status::error(Code::kInvalidArgument, "spec: empty; expected key=value pairs such as d_model=4096 heads=32");
  if (c.is_mla()) {  // the attention MLA makes, where the spec does not give it: one latent row
    if (c.head_dim == 0) c.head_dim = c.mla.kv_lora_rank + c.mla.qk_rope_head_dim;
    if (c.n_kv_heads == 0) c.n_kv_heads = 1;
    if (c.rope.style != RopeStyle::kNone && c.rope.rotary_dim == 0) c.rope.rotary_dim = c.mla.qk_rope_head_dim;
  }
  return c;
}

}  // namespace headway
