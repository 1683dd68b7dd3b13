// Hugging Face config.json → Config.
//
// Built with -fno-exceptions and JSON_NOEXCEPTION: nlohmann's throwing accessors (at(), get<T>()
// on the wrong type, operator[] on a const object) would abort. Values are therefore reached only
// through find() and get_ptr<>() after an is_*() check, and parsing uses allow_exceptions=false.
// Missing keys keep the Config defaults; keys the parser cannot store are errors that name the
// file, the key and the value. Cross-field rules are validate()'s job.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "headway/tools/model_files.hpp"
#include "runtime/formats/file_bytes.hpp"
#include "runtime/formats/json_check.hpp"
#include "runtime/formats/json_values.hpp"
#include "runtime/formats/hf_layer_kinds.hpp"
#include "runtime/formats/hf_mla.hpp"
#include "runtime/formats/layer_kind_rules.hpp"

namespace headway {
namespace {

using json = nlohmann::json;
using formats::as_double;
using formats::joined;
using formats::kind_of;
using formats::kMaxCount;
using formats::lookup;
using formats::lookup_any;
using formats::read_count;
using formats::read_flag;
using formats::read_real;
using formats::shown;
using formats::Where;

// Larger than any real config.json (they are a few KiB) by three orders of magnitude.
constexpr size_t kMaxConfigBytes = size_t{16} << 20;

bool is_one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

// Bidirectional encoders with learned absolute positions and biased projections.
bool is_encoder(const std::string& t) {
  return is_one_of(t, {"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert", "ernie"});
}

bool is_falcon(const std::string& t) { return is_one_of(t, {"falcon", "RefinedWeb", "RefinedWebModel"}); }

// Derives the rotary width from a fraction of the head (Phi-2's partial_rotary_factor 0.4 × 80 =
// 32; GPT-NeoX's rotary_pct). The product must be a whole, even number of dims: rotate-half and
// interleaved RoPE both rotate pairs.
Status rotary_from_fraction(const Where& w, const char* key, const json& v, uint32_t head_size, RopeConfig* rope) {
  double factor = 0.0;
  HEADWAY_RETURN_IF_ERROR(read_real(w, key, v, false, &factor));
  if (factor > 1.0) {
    return Status::error(Code::kInvalidArgument, "%s: %s%s is %s, expected a fraction in (0, 1]", w.source, w.prefix,
                         key, shown(v).c_str());
  }
  if (head_size == 0) return Status();  // no head size to scale; validate() reports why
  const double dims = factor * head_size;
  const double whole = std::round(dims);
  if (std::fabs(dims - whole) > 1e-6 || static_cast<uint64_t>(whole) % 2 != 0 || whole < 2) {
    return Status::error(Code::kInvalidArgument,
                         "%s: %s%s %g * head_dim %u = %g rotary dims, expected a whole even "
                         "number of at least 2",
                         w.source, w.prefix, key, factor, head_size, dims);
  }
  const uint32_t rotary = static_cast<uint32_t>(whole);
  rope->rotary_dim = rotary < head_size ? rotary : 0;  // 0 = the whole head
  return Status();
}

// ALiBi in place of RoPE: BLOOM always; MPT by attn_config.alibi (MptAttentionConfig's default
// true) with attn_config.alibi_bias_max; Falcon by alibi (Falcon-RW), whose attention multiplies
// the biased logits by 1/sqrt(head_dim), slopes included. MPT's attn_config also says what
// headway does not run (clip_qkv, qk_ln) and an explicit softmax_scale.
Status read_alibi(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  cfg->alibi = model_type == "bloom";
  if (is_falcon(model_type)) {
    HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "alibi", &cfg->alibi));
    cfg->alibi_times_scale = cfg->alibi;
  }
  if (model_type != "mpt") return Status();
  const json* attn = lookup(obj, "attn_config");
  if (attn == nullptr) {
    cfg->alibi = true;
    return Status();
  }
  if (!attn->is_object()) {
    return Status::error(Code::kInvalidArgument, "%s: %sattn_config is %s, expected an object", w.source, w.prefix,
                         kind_of(*attn));
  }
  const Where aw{w.source, "attn_config."};
  cfg->alibi = true;
  HEADWAY_RETURN_IF_ERROR(read_flag(aw, *attn, "alibi", &cfg->alibi));
  if (const json* v = lookup(*attn, "alibi_bias_max")) {
    double b = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(aw, "alibi_bias_max", *v, false, &b));
    cfg->alibi_max_bias = static_cast<float>(b);
  }
  if (const json* v = lookup(*attn, "softmax_scale")) {
    double s = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(aw, "softmax_scale", *v, false, &s));
    cfg->scale = static_cast<float>(s);
  }
  bool qk_ln = false;
  HEADWAY_RETURN_IF_ERROR(read_flag(aw, *attn, "qk_ln", &qk_ln));
  if (qk_ln || lookup(*attn, "clip_qkv") != nullptr) {
    return Status::error(Code::kUnsupported,
                         "%s: attn_config.%s is not supported: headway's projections neither clamp q/k/v nor "
                         "LayerNorm q and k",
                         w.source, qk_ln ? "qk_ln true" : "clip_qkv");
  }
  return Status();
}

// LongRoPE, as transformers' _compute_longrope_parameters reads it: short_factor and long_factor
// (one per rotated pair), original_max_position_embeddings (the rope parameters' or the
// config's), factor (the parameters', else max_position_embeddings / original), attention_factor
// (optional: 0 derives it from the factor).
Status read_longrope(const Where& w, const json& obj, const json& scaling, Config* cfg) {
  RopeConfig& rope = cfg->rope;
  rope.scaling = RopeScaling::kLongRope;
  const json* original = lookup(obj, "original_max_position_embeddings");  // Phi3Config's takes priority
  if (!original) original = lookup(scaling, "original_max_position_embeddings");
  if (!original) {
    return Status::error(Code::kNotFound, "%s: %srope_scaling longrope has no original_max_position_embeddings",
                         w.source, w.prefix);
  }
  HEADWAY_RETURN_IF_ERROR(read_count(w, "original_max_position_embeddings", *original, 1, &rope.original_max_seq));
  const json* factor = lookup(scaling, "factor");
  if (factor && !factor->is_null()) {
    double f = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "factor", *factor, false, &f));
    rope.factor = static_cast<float>(f);
  } else {
    rope.factor = static_cast<float>(static_cast<double>(cfg->max_seq) / rope.original_max_seq);
  }
  if (const json* a = lookup(scaling, "attention_factor"); a && !a->is_null()) {
    double f = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "attention_factor", *a, false, &f));
    rope.attention_factor = static_cast<float>(f);
  }
  for (const char* key : {"short_factor", "long_factor"}) {
    float* out = key[0] == 's' ? rope.short_factor : rope.long_factor;
    const json* v = lookup(scaling, key);
    if (!v || !v->is_array() || v->size() > kMaxLongRopePairs) {
      return Status::error(Code::kInvalidArgument,
                           "%s: %srope_scaling longrope's %s is %s, expected a list of up to %u "
                           "numbers (one per rotated pair)",
                           w.source, w.prefix, key, v ? shown(*v).c_str() : "missing", kMaxLongRopePairs);
    }
    rope.longrope_pairs = static_cast<uint32_t>(v->size());  // validate() checks it against the pairs
    for (size_t i = 0; i < v->size(); ++i) {
      double f = 0.0;
      HEADWAY_RETURN_IF_ERROR(read_real(w, key, (*v)[i], false, &f));
      out[i] = static_cast<float>(f);
    }
  }
  if (lookup(scaling, "short_factor")->size() != lookup(scaling, "long_factor")->size()) {
    return Status::error(Code::kInvalidArgument, "%s: %srope_scaling longrope has %zu short and %zu long factors",
                         w.source, w.prefix, lookup(scaling, "short_factor")->size(),
                         lookup(scaling, "long_factor")->size());
  }
  return Status();
}

// Context-extension schemes change the RoPE frequencies. linear, llama3 (Llama 3.1/3.2), yarn,
// longrope and dynamic are applied; other types are kept as RopeScaling::kOther: the plan does not
// depend on them, and the KV cache refuses to run with rotations it cannot reproduce.
// Gemma 4's full layers: partial_rotary_factor (1 where absent) of their head's pairs rotate, at
// theta^(-2i / head_dim) / factor (transformers' _compute_proportional_rope_parameters).
Status read_proportional(const Where& w, const json& params, Config* cfg) {
  RopeConfig& rope = cfg->rope;
  rope.scaling = RopeScaling::kProportional;
  rope.rotary_dim = 0;
  double fraction = 1.0, factor = 1.0;
  if (const json* v = lookup(params, "partial_rotary_factor")) {
    HEADWAY_RETURN_IF_ERROR(read_real(w, "partial_rotary_factor", *v, false, &fraction));
  }
  if (const json* v = lookup(params, "factor"); v && !v->is_null()) {
    HEADWAY_RETURN_IF_ERROR(read_real(w, "factor", *v, false, &factor));
  }
  rope.factor = static_cast<float>(factor);
  const uint32_t head = cfg->layers.full_head_dim ? cfg->layers.full_head_dim : cfg->head_size();
  rope.rotated_pairs = static_cast<uint32_t>(fraction * head / 2.0);
  return Status();
}

Status read_rope_scaling(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  const json* scaling = lookup(obj, "rope_scaling");
  const bool from_parameters = scaling == nullptr;
  if (from_parameters) scaling = formats::rope_parameters(obj, "full_attention");  // transformers 5
  if (!scaling) return Status();
  if (!scaling->is_object()) {
    return Status::error(Code::kInvalidArgument, "%s: %srope_scaling is %s (%s), expected an object or null", w.source,
                         w.prefix, shown(*scaling).c_str(), kind_of(*scaling));
  }
  const json* t = lookup(*scaling, "rope_type");
  if (!t) t = lookup(*scaling, "type");
  if (!t && from_parameters) return Status();  // rope_parameters with only rope_theta: plain RoPE
  if (!t || !t->is_string()) {
    return Status::error(Code::kInvalidArgument, "%s: %srope_scaling has no rope_type string (found %s)", w.source,
                         w.prefix, t ? shown(*t).c_str() : "none");
  }
  std::string type = *t->get_ptr<const json::string_t*>();
  RopeConfig& rope = cfg->rope;
  if (type == "default") return Status();
  if (model_type == "phi3" && (type == "su" || type == "yarn")) type = "longrope";  // as Phi3Config renames them
  if (type == "longrope") return read_longrope(w, obj, *scaling, cfg);
  if (type == "proportional") return read_proportional(w, *scaling, cfg);
  if (type == "dynamic") {  // dynamic NTK: its factor over the config's own context, which it extends
    rope.scaling = RopeScaling::kDynamic;
    rope.original_max_seq = cfg->max_seq;
    const json* f = lookup(*scaling, "factor");
    if (!f || f->is_null()) {
      return Status::error(Code::kNotFound, "%s: %srope_scaling of type dynamic has no factor", w.source, w.prefix);
    }
    double d = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "factor", *f, false, &d));
    rope.factor = static_cast<float>(d);
    // The context it runs: factor × max_position_embeddings, the extension the factor is for.
    const double extended = d * cfg->max_seq;
    if (d > 1.0 && extended < 0x7fffffff) cfg->max_seq = static_cast<uint32_t>(extended);
    return Status();
  }
  if (type != "linear" && type != "llama3" && type != "yarn") {
    rope.scaling = RopeScaling::kOther;
    return Status();
  }
  rope.scaling = type == "linear" ? RopeScaling::kLinear : type == "llama3" ? RopeScaling::kLlama3 : RopeScaling::kYarn;
  const bool llama3 = rope.scaling == RopeScaling::kLlama3, yarn = rope.scaling == RopeScaling::kYarn;
  struct Field {
    const char* key;
    float* out;
    bool applies, required;
  };
  const Field fields[] = {{"factor", &rope.factor, true, true},
                          {"low_freq_factor", &rope.low_freq_factor, llama3, true},
                          {"high_freq_factor", &rope.high_freq_factor, llama3, true},
                          {"beta_fast", &rope.beta_fast, yarn, false},
                          {"beta_slow", &rope.beta_slow, yarn, false},
                          {"attention_factor", &rope.attention_factor, yarn, false},
                          {"mscale", &rope.mscale, yarn, false},
                          {"mscale_all_dim", &rope.mscale_all_dim, yarn, false}};
  for (const Field& f : fields) {
    if (!f.applies) continue;
    const json* v = lookup(*scaling, f.key);
    if (!v || v->is_null()) {  // yarn's optional keys may be null: Hugging Face's defaults then
      if (f.required) {
        return Status::error(Code::kNotFound, "%s: %srope_scaling of type %s has no %s", w.source, w.prefix,
                             type.c_str(), f.key);
      }
      continue;
    }
    double d = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, f.key, *v, false, &d));
    *f.out = static_cast<float>(d);
  }
  if (yarn) {
    if (const json* v = lookup(*scaling, "truncate")) {
      if (!v->is_boolean()) {
        return Status::error(Code::kInvalidArgument, "%s: %srope_scaling truncate is %s (%s), expected true or false",
                             w.source, w.prefix, shown(*v).c_str(), kind_of(*v));
      }
      rope.yarn_truncate = v->get<bool>();
    }
  }
  if (llama3 || yarn) {
    const json* v = lookup(*scaling, "original_max_position_embeddings");
    if (v) {
      HEADWAY_RETURN_IF_ERROR(read_count(w, "original_max_position_embeddings", *v, 1, &rope.original_max_seq));
    } else if (llama3) {
      return Status::error(Code::kNotFound, "%s: %srope_scaling of type llama3 has no original_max_position_embeddings",
                           w.source, w.prefix);
    } else {
      rope.original_max_seq = cfg->max_seq;  // Hugging Face's default: the model's own context
    }
  }
  return Status();
}

constexpr const char* kHiddenKeys[] = {"hidden_size", "n_embd", "n_embed", "d_model", "dim"};  // n_embed: BLOOM
constexpr const char* kHeadKeys[] = {"num_attention_heads", "n_head", "n_heads"};
constexpr const char* kKvHeadKeys[] = {"num_key_value_heads", "n_head_kv", "num_kv_heads"};
constexpr const char* kMaxSeqKeys[] = {"max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "seq_length"};
constexpr const char* kLayerKeys[] = {"num_hidden_layers", "n_layer", "num_layers", "n_layers"};

template <size_t N>
Status read_required(const Where& w, const json& obj, const char* const (&keys)[N], const char* what, uint32_t* out) {
  const char* key = nullptr;
  const json* v = lookup_any(obj, keys, &key);
  if (!v) {
    return Status::error(Code::kNotFound, "%s: no %s: expected one of %s%s", w.source, what,
                         w.prefix[0] ? "these keys in text_config: " : "", joined(keys).c_str());
  }
  return read_count(w, key, *v, 1, out);
}

// The KV head count. Falcon encodes it in three ways: multi_query (default true in HF's
// FalconConfig) means one shared head; new_decoder_architecture (Falcon-40B/180B, and the old
// "RefinedWeb" type) reads num_kv_heads; neither means MHA.
Status read_kv_heads(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  const char* key = nullptr;
  const json* kv = lookup_any(obj, kKvHeadKeys, &key);
  bool multi_query = is_falcon(model_type) || model_type == "gpt_bigcode";
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "multi_query", &multi_query));
  if (is_falcon(model_type)) {
    bool new_arch = model_type == "RefinedWeb";
    HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "new_decoder_architecture", &new_arch));
    if (new_arch) {
      if (kv) return read_count(w, key, *kv, 1, &cfg->n_kv_heads);
      return Status();
    }
    cfg->n_kv_heads = multi_query ? 1 : 0;
    return Status();
  }
  if (kv) return read_count(w, key, *kv, 1, &cfg->n_kv_heads);
  if (multi_query) cfg->n_kv_heads = 1;
  return Status();
}

Status read_rope(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (is_encoder(model_type) || is_one_of(model_type, {"gpt2", "gpt_bigcode", "opt", "mpt", "bloom"}) || cfg->alibi) {
    cfg->rope.style = RopeStyle::kNone;
    return Status();
  }
  // GPT-J and CodeGen rotate interleaved pairs (rotate_every_two), Cohere and Cohere2 too (their
  // rotate_half takes x[..., ::2] and x[..., 1::2]); every other HF implementation, Llama's
  // included, rotates halves.
  const bool interleaved = is_one_of(model_type, {"gptj", "codegen", "cohere", "cohere2"});
  cfg->rope.style = interleaved ? RopeStyle::kGptj : RopeStyle::kNeox;

  const char* theta_key = "rope_theta";
  const json* theta = lookup(obj, theta_key);
  if (!theta) theta = lookup(obj, theta_key = "rotary_emb_base");        // GPT-NeoX
  const json* params = formats::rope_parameters(obj, "full_attention");  // transformers 5
  if (!theta && params) theta = lookup(*params, theta_key = "rope_theta");
  if (theta) {
    double t = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, theta_key, *theta, false, &t));
    cfg->rope.theta = static_cast<float>(t);
  } else if (formats::is_gemma3(model_type)) {
    cfg->rope.theta = formats::kGemma3RopeTheta;
  }

  if (const json* dim = lookup(obj, "rotary_dim")) {  // GPT-J, CodeGen: dims, not a fraction
    uint32_t d = 0;
    HEADWAY_RETURN_IF_ERROR(read_count(w, "rotary_dim", *dim, 1, &d));
    cfg->rope.rotary_dim = d == cfg->head_size() ? 0 : d;
    return Status();
  }
  // Proportional RoPE (Gemma 4) reads its fraction with its scaling: it rotates across the head.
  const json* type = params ? lookup(*params, "rope_type") : nullptr;
  if (type && type->is_string() && *type == "proportional") return Status();
  // The head size the fraction applies to, when it is defined without validate()'s rules.
  const uint32_t head_size = cfg->head_dim ? cfg->head_dim : (cfg->d_model % cfg->n_heads == 0 ? cfg->head_size() : 0);
  const json* fraction = lookup(obj, "partial_rotary_factor");
  if (!fraction && params) fraction = lookup(*params, "partial_rotary_factor");
  if (fraction) return rotary_from_fraction(w, "partial_rotary_factor", *fraction, head_size, &cfg->rope);
  if (formats::is_gated_qwen(model_type)) {
    return rotary_from_fraction(w, "partial_rotary_factor", json(formats::kGatedQwenRotaryFraction), head_size,
                                &cfg->rope);
  }
  if (const json* f = lookup(obj, "rotary_pct")) {  // GPT-NeoX / Pythia
    return rotary_from_fraction(w, "rotary_pct", *f, head_size, &cfg->rope);
  }
  return Status();
}

// Bias and norm flags that follow from the family, then the explicit keys that override them.
Status read_projection_flags(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  if (is_encoder(model_type) || is_one_of(model_type, {"gpt2", "gpt_bigcode", "phi", "gpt_neox", "opt", "bloom"})) {
    cfg->qkv_bias = cfg->o_bias = true;
  }
  if (is_one_of(model_type, {"qwen", "qwen2", "qwen2_moe"}) || formats::is_qwen_vl(model_type)) cfg->qkv_bias = true;
  if (is_one_of(model_type, {"qwen3", "qwen3_moe"})) cfg->qk_norm = true;
  if (formats::is_gated_qwen(model_type)) {  // Qwen3_5Attention: query and gate rows, (1 + w) q/k norms
    cfg->output_gate = cfg->qk_norm = true;
    cfg->qk_norm_offset = 1.0f;
  }
  if (model_type == "olmo2") cfg->qk_norm = cfg->qk_norm_across_heads = true;  // Olmo2Attention's q_norm [q width]
  if (formats::is_gemma3(model_type)) {  // Gemma3RMSNorm: x · rsqrt(...) · (1 + w)
    cfg->qk_norm = true;
    cfg->qk_norm_offset = 1.0f;
  }
  if (const json* e = lookup(obj, "rms_norm_eps")) {
    double d = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "rms_norm_eps", *e, false, &d));
    cfg->rms_norm_eps = static_cast<float>(d);
  }

  bool bias = cfg->qkv_bias;
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "attention_bias", &bias));
  if (is_falcon(model_type)) HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "bias", &bias));
  if (model_type == "mpt") {  // MptConfig's no_bias (default true)
    bool no_bias = true;
    HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "no_bias", &no_bias));
    bias = !no_bias;
  }
  if (bias != cfg->qkv_bias) cfg->qkv_bias = cfg->o_bias = bias;

  bool qk_layernorm = false;  // Phi / StableLM / Persimmon: a LayerNorm, not the RMS norm qk_norm is
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "qk_layernorm", &qk_layernorm));
  if (qk_layernorm) {
    return Status::error(Code::kUnsupported,
                         "%s: %sqk_layernorm true is not supported: headway's qk_norm is a "
                         "per-head RMS norm, not a LayerNorm",
                         w.source, w.prefix);
  }
  return Status();
}

Status read_attention_extras(const Where& w, const json& obj, const std::string& model_type, Config* cfg) {
  // Qwen2 and SmolLM3 write a sliding_window and switch it on or off with this flag.
  bool use_window = !formats::sliding_window_off_by_default(model_type);
  HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "use_sliding_window", &use_window));
  if (const json* v = lookup(obj, "sliding_window")) {
    uint32_t window = 0;
    HEADWAY_RETURN_IF_ERROR(read_count(w, "sliding_window", *v, 0, &window));
    // A window of at least the context hides no key (Phi-4-mini's 262144 over 131072): the
    // context itself, as transformers' mask computes it.
    if (use_window) cfg->window = window < cfg->max_seq ? window : cfg->max_seq;
  }
  if (const json* v = lookup(obj, "attn_logit_softcapping")) {  // Gemma 2
    double c = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "attn_logit_softcapping", *v, true, &c));
    cfg->softcap = static_cast<float>(c);
  }
  if (const json* v = lookup(obj, "query_pre_attn_scalar")) {  // Gemma 2
    double s = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "query_pre_attn_scalar", *v, false, &s));
    cfg->query_pre_attn_scalar = static_cast<float>(s);
  }
  return Status();
}

// ModernBERT: bidirectional; its local layers see |i − j| <= local_attention / 2, a symmetric
// window of local_attention / 2 + 1 keys each way (ModernBertAttention's sliding_window); the
// global layers' RoPE base is global_rope_theta (transformers 5: rope_parameters, read as any
// model's). Which layers are local, and their base, read_layer_kinds reads.
Status read_modernbert(const Where& w, const json& obj, Config* cfg) {
  cfg->causal = false;
  uint32_t local = formats::kModernBertLocalAttention;
  if (const json* v = lookup(obj, "local_attention")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "local_attention", *v, 1, &local));
  }
  cfg->window = local / 2 + 1;
  cfg->window_symmetric = true;
  const json* params = formats::rope_parameters(obj, "full_attention");
  if (const json* v = lookup(obj, "global_rope_theta")) {
    double t = 0.0;
    HEADWAY_RETURN_IF_ERROR(read_real(w, "global_rope_theta", *v, false, &t));
    cfg->rope.theta = static_cast<float>(t);
  } else if (lookup(obj, "rope_theta") == nullptr && (params == nullptr || lookup(*params, "rope_theta") == nullptr)) {
    cfg->rope.theta = formats::kModernBertGlobalRopeTheta;
  }
  return Status();
}

Result<Config> parse_object(const Where& w, const json& obj, const std::string& model_type) {
  if (model_type == "bert") {
    const json* pos = lookup(obj, "position_embedding_type");
    if (pos && !(pos->is_string() && *pos->get_ptr<const json::string_t*>() == "absolute")) {
      return Status::error(Code::kUnsupported, "%s: %sposition_embedding_type %s is not supported (only \"absolute\")",
                           w.source, w.prefix, shown(*pos).c_str());
    }
  }

  Config cfg;
  cfg.set_name(model_type.c_str());
  HEADWAY_RETURN_IF_ERROR(read_required(w, obj, kHiddenKeys, "hidden size", &cfg.d_model));
  HEADWAY_RETURN_IF_ERROR(read_required(w, obj, kHeadKeys, "attention head count", &cfg.n_heads));
  HEADWAY_RETURN_IF_ERROR(read_kv_heads(w, obj, model_type, &cfg));
  if (const json* v = lookup(obj, "head_dim")) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, "head_dim", *v, 1, &cfg.head_dim));
  } else if (formats::is_gated_qwen(model_type)) {
    cfg.head_dim = formats::kGatedQwenHeadDim;
  }
  const char* seq_key = nullptr;
  if ((is_falcon(model_type) || model_type == "bloom") && !lookup_any(obj, kMaxSeqKeys, &seq_key)) {
    // falcon-7b's and BLOOM's config.json do not say it: FalconConfig's default, BLOOM's training
    // length (its ALiBi has no table that sets a limit)
    cfg.max_seq = 2048;
  } else {
    HEADWAY_RETURN_IF_ERROR(read_required(w, obj, kMaxSeqKeys, "context length", &cfg.max_seq));
  }
  const char* layer_key = nullptr;
  if (const json* v = lookup_any(obj, kLayerKeys, &layer_key)) {
    HEADWAY_RETURN_IF_ERROR(read_count(w, layer_key, *v, 1, &cfg.n_layers));
  }

  HEADWAY_RETURN_IF_ERROR(read_alibi(w, obj, model_type, &cfg));
  HEADWAY_RETURN_IF_ERROR(formats::read_gemma_per_layer(w, obj, model_type, &cfg));
  HEADWAY_RETURN_IF_ERROR(read_rope(w, obj, model_type, &cfg));
  HEADWAY_RETURN_IF_ERROR(read_rope_scaling(w, obj, model_type, &cfg));
  if (formats::is_gemma4(model_type) && lookup(obj, "rope_parameters") == nullptr) {
    // Gemma4TextConfig's default: proportional over a quarter of the full layers' heads at 1e6.
    cfg.rope.theta = formats::kGemma4RopeTheta;
    HEADWAY_RETURN_IF_ERROR(
        read_proportional(w, json{{"partial_rotary_factor", formats::kGemma4RotaryFraction}}, &cfg));
  }
  HEADWAY_RETURN_IF_ERROR(read_projection_flags(w, obj, model_type, &cfg));
  HEADWAY_RETURN_IF_ERROR(read_attention_extras(w, obj, model_type, &cfg));
  if (model_type == "modernbert") HEADWAY_RETURN_IF_ERROR(read_modernbert(w, obj, &cfg));
  HEADWAY_RETURN_IF_ERROR(formats::read_layer_kinds(w, obj, model_type, &cfg));
  HEADWAY_RETURN_IF_ERROR(formats::read_mla(w, obj, model_type, &cfg));

  if (is_encoder(model_type)) {
    bool is_decoder = false;
    HEADWAY_RETURN_IF_ERROR(read_flag(w, obj, "is_decoder", &is_decoder));
    cfg.causal = is_decoder;
  }
  return cfg;
}

Status syntax_error(const char* text, size_t size, const char* source) {
  formats::JsonCheck sax;
  sax.run(text, size);
  if (!sax.failed()) return Status::error(Code::kInvalidArgument, "%s is not valid JSON", source);
  return Status::error(Code::kInvalidArgument, "%s is not valid JSON: %s", source, sax.error().c_str());
}

}  // namespace

Result<Config> parse_hf_config(const char* text, size_t size, const char* source) {
  if (!source) source = "config.json";
  if (!text && size) return Status::error(Code::kInvalidArgument, "%s: no text given", source);
  const json top = json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded()) return syntax_error(text, size, source);
  if (!top.is_object()) {
    return Status::error(Code::kInvalidArgument, "%s: the top level is %s, expected a JSON object", source,
                         kind_of(top));
  }
  Where w{source, ""};
  const json* obj = &top;
  // Multimodal wrappers (LLaVA, Gemma 3, Mistral 3) keep the language model in text_config.
  const char* unused = nullptr;
  if (!lookup_any(top, kHiddenKeys, &unused)) {
    const json* text_config = lookup(top, "text_config");
    if (text_config && text_config->is_object()) {
      obj = text_config;
      w.prefix = "text_config.";
    }
  }
  std::string model_type;
  const json* type = lookup(*obj, "model_type");
  if (!type) type = lookup(top, "model_type");
  if (type) {
    if (!type->is_string()) {
      return Status::error(Code::kInvalidArgument, "%s: model_type is %s (%s), expected a string", source,
                           shown(*type).c_str(), kind_of(*type));
    }
    model_type = *type->get_ptr<const json::string_t*>();
  }
  return parse_object(w, *obj, model_type);
}

Result<Config> load_hf_config(const char* path) {
  Result<formats::FileBytes> file = formats::read_file(path, kMaxConfigBytes, "a config.json");
  if (!file.ok()) return file.status();
  const std::vector<uint8_t>& bytes = file->bytes;
  return parse_hf_config(reinterpret_cast<const char*>(bytes.data()), bytes.size(), path);
}

}  // namespace headway
