// Config: the compact description of a model's attention, as a user or a model file gives it.
// Plain data, constexpr-friendly, no heap. validate() checks it; make_plan() (plan.hpp) turns a
// valid one into every layout and byte count the runtime will use.
#pragma once

#include <cstdint>

#include "headway/detail/attention_policy.hpp"
#include "headway/dtype.hpp"
#include "headway/status.hpp"

namespace headway {

enum class RopeStyle : uint8_t {
  kNone = 0,  // no rotary embedding (BERT, GPT-2: learned absolute positions)
  kNeox,      // rotate-half: pairs (i, i + rotary_dim/2)  — Llama, Mistral, Qwen, Gemma
  kGptj,      // interleaved: pairs (2i, 2i + 1)           — GPT-J, Phi-2's original code
};
const char* rope_style_name(RopeStyle s);

// Context-extension rescaling of the RoPE frequencies (config.json's rope_scaling).
enum class RopeScaling : uint8_t {
  kNone = 0,
  kLinear,  // every frequency / factor (position interpolation)
  kLlama3,  // Llama 3.1/3.2: low frequencies / factor, high kept, a smooth ramp between
  kYarn,    // YaRN (gpt-oss, Qwen 2.5/3 long context, DeepSeek): a ramp over the pair index between
            // interpolated and kept frequencies, and cos/sin scaled by an attention factor
  kOther,   // a type headway cannot apply: planned, not run
  // LongRoPE (Phi-3/3.5 long context, Phi-4-mini, MiniCPM3): pair i's frequency divided by
  // short_factor[i], or long_factor[i] in a call whose last position passes original_max_seq (as
  // transformers switches them per forward call); cos and sin scaled by an attention factor.
  kLongRope,
  // Dynamic NTK (transformers' "dynamic"): in a call whose last position passes original_max_seq
  // (max_position_embeddings), the base grows to theta · (factor · end / original − (factor −
  // 1))^(rotary / (rotary − 2)), `end` the position after the call's last token; plain RoPE before.
  kDynamic,
  // Proportional (Gemma 4's full layers): rotate-half pairs (i, i + head_dim/2) over the whole
  // head, pair i at theta^(−2i / head_dim) / factor for i < rotated_pairs and not rotated past it.
  kProportional,
};

// The most rotated pairs LongRoPE's per-pair factors cover (rotary dims up to 128).
inline constexpr uint32_t kMaxLongRopePairs = 64;

const char* rope_scaling_name(RopeScaling s);

// YaRN's mscale(s, m) = 0.1 · m · ln(s) + 1 (1 for s <= 1): the cos/sin factor, and MLA's logit
// scale factor (mscale(factor, mscale_all_dim)², as transformers' yarn_apply_mscale).
double yarn_mscale(double factor, double m);  // "none", "linear", "llama3", "yarn", "other"

struct RopeConfig {
  RopeStyle style = RopeStyle::kNone;
  float theta = 10000.0f;
  uint32_t rotary_dim = 0;  // dims rotated per head; 0 = all of head_dim (partial rotary below)
  RopeScaling scaling = RopeScaling::kNone;
  float factor = 1.0f;               // kLinear, kLlama3, kYarn
  float low_freq_factor = 1.0f;      // kLlama3
  float high_freq_factor = 4.0f;     // kLlama3
  uint32_t original_max_seq = 8192;  // kLlama3, kYarn: original_max_position_embeddings
  // kYarn (Hugging Face's names): the ramp runs between the pair indices where a frequency makes
  // beta_fast and beta_slow turns over original_max_seq (rounded outwards unless !yarn_truncate);
  // cos and sin are multiplied by attention_factor, or when it is 0 by
  // mscale(factor, mscale) / mscale(factor, mscale_all_dim) where both are set, else
  // mscale(factor, 1), with mscale(s, m) = 0.1 · m · ln(s) + 1 (1 for s <= 1).
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  float attention_factor = 0.0f;
  float mscale = 0.0f;
  float mscale_all_dim = 0.0f;
  bool yarn_truncate = true;
  // kLongRope: the per-pair divisors of the short (positions within original_max_seq) and long
  // tables, longrope_pairs of each (the rotated pairs); cos and sin are multiplied by
  // attention_factor, or when it is 0 by sqrt(1 + ln(factor) / ln(original_max_seq)) (1 for
  // factor <= 1), factor being max_position_embeddings / original_max_seq unless the config says.
  uint32_t longrope_pairs = 0;
  float short_factor[kMaxLongRopePairs] = {};
  float long_factor[kMaxLongRopePairs] = {};
  uint32_t rotated_pairs = 0;  // kProportional
};

// The most layers a Config lists one by one (LayerKinds' explicit lists): the deepest real models
// (Llama 3.1 405B: 126 layers) fit. Regular patterns need no list and have no such bound.
inline constexpr uint32_t kMaxConfigLayers = 128;
static_assert(kMaxConfigLayers % 32 == 0, "LayerBits packs whole 32-bit words");

// One yes/no per layer, for up to kMaxConfigLayers layers, packed in bits (a Plan, and so every
// layer of a Session, holds a copy: 16 bytes rather than 128).
struct LayerBits {
  uint32_t count = 0;  // entries given: 0 (none) or n_layers
  uint32_t words[kMaxConfigLayers / 32] = {};
  constexpr bool get(uint32_t i) const { return i < kMaxConfigLayers && ((words[i / 32] >> (i % 32)) & 1u) != 0; }
  constexpr void set(uint32_t i, bool on) {
    if (i >= kMaxConfigLayers) return;
    const uint32_t bit = 1u << (i % 32);
    words[i / 32] = on ? (words[i / 32] | bit) : (words[i / 32] & ~bit);
  }
};

// How layers differ (Gemma 2/3, gpt-oss, SmolLM3, Qwen2, Cohere2). Which layers slide, with
// Config::window keys: the explicit list if given, else the pattern if given, else every layer
// when window > 0. Which layers rotate (when rope.style is not kNone): the explicit list if given,
// else every layer but those the NoPE interval names. All zero: every layer alike.
struct LayerKinds {
  uint32_t sliding_pattern = 0;   // N > 0: layer i is full when (i + 1) % N == 0, else sliding (Gemma 2: 2, Gemma 3: 6)
  uint32_t nope_interval = 0;     // N > 0: layer i has no RoPE when (i + 1) % N == 0 (SmolLM3: 4)
  float local_rope_theta = 0.0f;  // the RoPE base of sliding layers; 0 = rope.theta (Gemma 3: 10000)
  LayerBits sliding;              // set: layer i slides; clear: full attention
  LayerBits rope;                 // set: layer i rotates; clear: no RoPE (a NoPE layer)
  // set: layer i is linear attention (Gated DeltaNet: Qwen3.5's and Qwen3-Next's layer_types
  // "linear_attention"), shaped by Config::gated_delta: a fixed state instead of a KV cache.
  LayerBits linear;
  // Gemma 4's full layers' own head shape (global_head_dim, num_global_key_value_heads; 0: the
  // config's) and V taken from K's projection on them (attention_k_eq_v).
  uint32_t full_head_dim = 0;
  uint32_t full_kv_heads = 0;
  bool full_k_eq_v = false;
  // Gemma 3n / 4: the last kv_shared_layers layers have no K/V projections and read the cache of
  // the last earlier layer of their kind (num_kv_shared_layers).
  uint32_t kv_shared_layers = 0;
};

// The model around the attention blocks (embeddings, norms, MLP, LM head), as its files give it;
// its tensors: headway/model_tensors.hpp. vocab_size 0: no model, only the stack of attention
// blocks (Session). A decoder (causal; Model, headway/model.hpp) runs pre-norm, as Llama,
// SmolLM2, Mistral, Qwen2/3 and Gemma do (Gemma 2/3: h += norm(attn(norm(h))), likewise the MLP):
//   h += attn(norm(h));  h += mlp(norm(h));  logits = final_norm(h) · headᵀ (the embedding when tied)
// An encoder (bidirectional, post_norm; Encoder, headway/encoder.hpp) as BERT and MiniLM do:
//   h = embedding_norm(tokens + positions + token type 0);  h = norm(h + attn(h));  h = norm(h + mlp(h))
enum class NormKind : uint8_t {
  kNone = 0,
  kRms,    // RMSNorm: x / sqrt(mean(x²) + eps) · w
  kLayer,  // LayerNorm: (x − mean) / sqrt(var + eps) · w + b
};
enum class MlpKind : uint8_t {
  kNone = 0,
  kSwiGlu,  // down(silu(gate(x)) · up(x))
  kGelu,    // down(gelu(up(x))), GELU exact (erf), as BERT's "gelu"
  kGeGlu,   // down(gelu_tanh(gate(x)) · up(x)), as Gemma's "gelu_pytorch_tanh"
};
const char* norm_kind_name(NormKind k);  // "none", "rms", "layer"
const char* mlp_kind_name(MlpKind k);    // "none", "swiglu", "gelu", "geglu"
struct ModelConfig {
  uint32_t vocab_size = 0;
  uint32_t intermediate_size = 0;  // the MLP's hidden width
  NormKind norm = NormKind::kNone;
  float norm_eps = 1e-5f;
  MlpKind mlp = MlpKind::kNone;
  bool mlp_bias = false;             // up and down carry biases (BERT)
  bool tie_word_embeddings = false;  // the LM head is the token embedding
  bool post_norm = false;            // each norm after its residual add, no final norm (BERT)
  bool embedding_norm = false;       // a norm after the embeddings (BERT)
  uint32_t max_positions = 0;        // learned absolute position embeddings (BERT); 0: none
  // RoBERTa's positions: padding_idx + the count of non-padding tokens so far (padding itself at
  // padding_idx), as create_position_ids_from_input_ids; a sequence then holds at most
  // max_positions − padding_idx − 1 tokens. −1: positions 0, 1, 2, ... (BERT).
  int32_t padding_idx = -1;
  uint32_t type_vocab_size = 0;  // token type embeddings (BERT; type 0 is added); 0: none
  // Gemma: the RMSNorm weights scale by (norm_offset + w): 1 for config.json's weights, 0 for a
  // GGUF's (llama.cpp's converter adds the 1); embeddings times sqrt(d_model); Gemma 2/3 also
  // normalize each block's output before its residual add (kPostAttnNorm, kPostFfnNorm), and
  // Gemma 2 caps the logits: c · tanh(logits / c).
  float norm_offset = 0.0f;
  bool scale_embedding = false;
  bool sandwich_norm = false;
  float final_softcap = 0.0f;
  // OLMo 2: each block's output normed before its residual add (kPostAttnNorm, kPostFfnNorm), its
  // input not (no kAttnNorm, kFfnNorm).
  bool output_norms_only = false;
  // Phi-3: the gate and up projections are one tensor [2·intermediate_size, d_model], the gate's
  // rows first (Hugging Face's gate_up_proj, llama.cpp's ffn_up); kGate and kUp are its halves.
  bool gate_up_fused = false;
};

// A rotation of a quantized KV cache's rows before they are quantized (headway/hadamard.hpp):
// kHadamard rotates each head's K (after RoPE), V and the queries by the same normalized
// Walsh-Hadamard transform and the attention's output back, so that one large channel no longer
// sets the scale of its whole q8_0/q4_0 block (llama.cpp does the same since 2026). Only with
// kv_dtype q8_0 or q4_0, and a head_dim hadamard_block() can rotate (a multiple of 32); the
// cache's bytes are the same.
enum class KvRotation : uint8_t {
  kNone = 0,
  kHadamard,
};
const char* kv_rotation_name(KvRotation r);  // "none", "hadamard"
bool kv_rotation_from_name(const char* s, KvRotation* out);
inline constexpr const char* kKvRotationNames = "none, hadamard";

// Where a model's block norms sit: "pre" (on each block's input), "post" (after each residual
// add, BERT), "pre and output" (Gemma 2/3: also on each block's output), "output" (OLMo 2).
const char* norm_placement_name(const ModelConfig& m);

// Multi-head latent attention (DeepSeek-V2/V3, MiniCPM3, Youtu-LLM, PLM), run absorbed. A token's
// cache row is [r | c]: its shared RoPE key r (qk_rope_head_dim values, rotated) and its latent c
// (kv_lora_rank values, RMS-normed), K and V at once (V is the same row). Every head attends over
// the rows as MQA: its query [q_nope | q_rope] (qk_nope_head_dim + qk_rope_head_dim) becomes
// [q_rope | W_UKᵀ·q_nope], and the c part of its output becomes W_UV·o_c (v_head_dim values)
// before Wo. The Config's head_dim (qk_rope_head_dim + kv_lora_rank) and n_kv_heads (1) are the
// attention's; these are the model's own head sizes.
struct MlaShape {
  uint32_t kv_lora_rank = 0;  // 0: not MLA
  uint32_t q_lora_rank = 0;   // 0: a full-rank q_proj
  uint32_t qk_nope_head_dim = 0;
  uint32_t qk_rope_head_dim = 0;
  uint32_t v_head_dim = 0;
  float q_a_norm_eps = 1e-6f;   // the query latent's RMS norm
  float kv_a_norm_eps = 1e-6f;  // the kv latent's RMS norm
};

// Gated DeltaNet (Qwen3.5's and Qwen3-Next's linear_attention layers, LayerKinds::linear). A
// token's projections are [q | k | v] (conv_width values: key_heads query and key heads of
// key_head_dim, value_heads value heads of value_head_dim), the output gate z [value_width] and
// one a and b per value head. q, k and v pass a causal depthwise convolution of conv_kernel taps
// (SiLU after), q and k are L2-normed, and each value head keeps a state [key_head_dim,
// value_head_dim] f32 that the gated delta rule updates token by token; a query/key head serves
// value_heads / key_heads consecutive value heads. The layer keeps no cache: its state and the
// last conv_kernel − 1 convolution inputs are all it remembers, whatever the context.
struct GatedDeltaShape {
  uint32_t key_heads = 0;       // linear_num_key_heads; 0: no linear layers
  uint32_t value_heads = 0;     // linear_num_value_heads, a multiple of key_heads
  uint32_t key_head_dim = 0;    // linear_key_head_dim
  uint32_t value_head_dim = 0;  // linear_value_head_dim
  uint32_t conv_kernel = 0;     // linear_conv_kernel_dim
  // How value heads meet key heads: value head h reads key head h / (value_heads / key_heads)
  // (transformers' repeat_interleave), or, tiled, h % key_heads (llama.cpp's qwen35 GGUFs, whose
  // converter reorders the value heads' rows so).
  bool tiled_value_heads = false;
  constexpr uint32_t key_width() const { return key_heads * key_head_dim; }
  constexpr uint32_t value_width() const { return value_heads * value_head_dim; }
  constexpr uint32_t conv_width() const { return 2 * key_width() + value_width(); }
  // The value heads' states [value_heads, key_head_dim, value_head_dim] and the convolution's
  // window [conv_kernel − 1, conv_width], in floats.
  constexpr uint64_t state_floats() const { return uint64_t{value_heads} * key_head_dim * value_head_dim; }
  constexpr uint64_t window_floats() const { return uint64_t{conv_kernel - 1} * conv_width(); }
  // The layer's f32 vectors: the convolution's taps [conv_width, conv_kernel], A = −exp(A_log)
  // and dt_bias [value_heads] each, the output norm's weight [value_head_dim].
  constexpr uint64_t vector_floats() const {
    return uint64_t{conv_width()} * conv_kernel + 2ull * value_heads + value_head_dim;
  }
};
inline constexpr uint32_t kMaxGatedDeltaConvKernel = 16;

// The longest name a Config carries (a preset name or config.json's model_type).
inline constexpr uint32_t kMaxNameLength = 47;

struct Config {
  char name[kMaxNameLength + 1] = {};
  uint32_t d_model = 0;     // hidden size: the width of x entering the attention block
  uint32_t n_heads = 0;     // query heads
  uint32_t n_kv_heads = 0;  // key/value heads; 0 = n_heads (MHA). Must divide n_heads.
  uint32_t head_dim = 0;    // 0 = d_model / n_heads (then n_heads must divide d_model)
  uint32_t max_seq = 0;     // context length: positions the KV cache holds (without a window)
  uint32_t n_layers = 1;
  RopeConfig rope;
  uint32_t window = 0;                 // sliding window in keys; 0 = full attention
  float softcap = 0.0f;                // logit softcap c: c * tanh(logit / c); 0 = off (Gemma 2: 50)
  float query_pre_attn_scalar = 0.0f;  // scale = 1/sqrt(this); 0 = head_dim (Gemma 2: 256 or 224)
  float scale = 0.0f;                  // explicit logit scale; 0 = from query_pre_attn_scalar / head_dim
  bool causal = true;                  // false: bidirectional (BERT)
  // Bidirectional sliding layers bound from above too: a row at p sees keys |p − j| < window
  // (ModernBERT's local layers: local_attention 128 is window 65). Needs a window and no causal.
  bool window_symmetric = false;
  bool qkv_bias = false;        // q/k/v projections carry a bias (Qwen2, BERT, GPT-2, Phi-2)
  bool o_bias = false;          // output projection carries a bias (BERT, GPT-2, Phi-2)
  bool qk_norm = false;         // per-head RMS norm on q and k before RoPE (Qwen3, Gemma 3)
  float rms_norm_eps = 1e-6f;   // epsilon of the qk_norm RMS norm (config.json's rms_norm_eps)
  float qk_norm_offset = 0.0f;  // added to each q/k norm weight: Gemma 3's norms scale by 1 + weight
  // With qk_norm: one RMS norm over all of q's heads and one over all of k's (OLMo 2), weights
  // [n_heads·head_dim] and [n_kv_heads·head_dim], rather than one per head.
  bool qk_norm_across_heads = false;
  // Gated attention (Qwen3.5, Qwen3-Next): Wq has 2·n_heads·head_dim rows, each head's query rows
  // followed by its gate's; the attention output is multiplied by sigmoid(gate) before Wo.
  bool output_gate = false;
  bool v_norm = false;  // Gemma 3n / 4: each head's v RMS-normed (eps rms_norm_eps), without a weight
  bool k_eq_v = false;  // no Wv: V is K's projection before its norm and RoPE (Gemma 4's full layers)
  DType kv_dtype = DType::kF16;
  KvRotation kv_rotation = KvRotation::kNone;  // q8_0/q4_0 caches: rotate rows before quantizing
  LayerKinds layers;                           // how layers differ; all zero: every layer alike
  // Learned per-head sink logits on every layer (gpt-oss): each layer's LayerWeights::sinks
  // [n_heads] joins every row's softmax (the CPU and the GPU backend).
  bool sinks = false;
  // Sink tokens (StreamingLLM) on every sliding layer: its first sink_tokens positions stay
  // visible through the window (a query at p sees key j iff j <= p and (j > p − window or
  // j < sink_tokens)) and its ring never evicts them. 0 = none; else less than window.
  uint32_t sink_tokens = 0;
  // ALiBi (BLOOM, MPT, Falcon-RW, MosaicBERT): every layer adds −m_h·|p − j| to its logits, m_h
  // the standard slopes (alibi_slopes() in attention.hpp) with alibi_max_bias in place of 8 (MPT's
  // alibi_bias_max).
  bool alibi = false;
  float alibi_max_bias = 8.0f;
  bool alibi_times_scale = false;  // the slopes times the logit scale (Falcon scales the biased logits)

  ModelConfig model;  // the rest of a decoder; vocab_size 0: attention blocks alone

  MlaShape mla;  // kv_lora_rank 0: not MLA

  GatedDeltaShape gated_delta;  // the linear layers' shape (LayerKinds::linear)

  constexpr bool is_mla() const { return mla.kv_lora_rank != 0; }

  constexpr uint32_t kv_heads() const { return n_kv_heads ? n_kv_heads : n_heads; }
  constexpr uint32_t head_size() const { return head_dim ? head_dim : (n_heads ? d_model / n_heads : 0); }
  // The q and k norms' weight lengths (qk_norm): one head's, or all heads' (qk_norm_across_heads).
  constexpr uint32_t q_norm_width() const { return qk_norm_across_heads ? n_heads * head_size() : head_size(); }
  constexpr uint32_t k_norm_width() const { return qk_norm_across_heads ? kv_heads() * head_size() : head_size(); }
  constexpr uint32_t rotary_dims() const {
    return rope.style == RopeStyle::kNone ? 0 : (rope.rotary_dim ? rope.rotary_dim : head_size());
  }
  // Layer i's kind (i < n_layers), as LayerKinds says.
  constexpr bool layer_slides(uint32_t i) const {
    if (window == 0) return false;
    if (layers.sliding.count) return layers.sliding.get(i);
    if (layers.sliding_pattern) return (i + 1) % layers.sliding_pattern != 0;
    return true;
  }
  constexpr bool layer_rotates(uint32_t i) const {
    if (rope.style == RopeStyle::kNone) return false;
    if (layers.rope.count) return layers.rope.get(i);
    if (layers.nope_interval) return (i + 1) % layers.nope_interval != 0;
    return true;
  }
  constexpr bool layer_is_linear(uint32_t i) const { return layers.linear.count && layers.linear.get(i); }
  constexpr float layer_rope_theta(uint32_t i) const { return layer_rope(i).theta; }
  // The first layer that is not linear attention (the last layer when all are): what a hybrid's
  // attention-only properties are read from and reported by.
  constexpr uint32_t first_attention_layer() const {
    uint32_t i = 0;
    while (i + 1 < n_layers && layer_is_linear(i)) ++i;
    return i;
  }
  // Shared KV (LayerKinds::kv_shared_layers): the first layer that reads another's cache
  // (n_layers when none does), and whose cache layer i reads: its own, or on a sharing layer the
  // last layer before the first sharing one that slides as it does (n_layers when there is none,
  // which validate() refuses).
  constexpr uint32_t first_kv_shared_layer() const {
    return layers.kv_shared_layers < n_layers ? n_layers - layers.kv_shared_layers : 0;
  }
  constexpr bool layer_shares_kv(uint32_t i) const { return layers.kv_shared_layers && i >= first_kv_shared_layer(); }
  constexpr uint32_t kv_owner(uint32_t i) const {
    if (!layer_shares_kv(i)) return i;
    for (uint32_t j = first_kv_shared_layer(); j-- > 0;) {
      if (layer_slides(j) == layer_slides(i) && !layer_is_linear(j)) return j;
    }
    return n_layers;
  }
  // Whether full layers have a head shape of their own (Gemma 4): full_shape() then differs.
  constexpr bool full_layers_shaped() const {
    return (layers.full_head_dim && layers.full_head_dim != head_size()) ||
           (layers.full_kv_heads && layers.full_kv_heads != kv_heads()) || (layers.full_k_eq_v && !k_eq_v);
  }
  // The config with every layer in the full layers' head shape (the full_* fields folded in).
  constexpr Config full_shape() const {
    Config c = *this;
    if (layers.full_head_dim) c.head_dim = layers.full_head_dim;
    if (layers.full_kv_heads) c.n_kv_heads = layers.full_kv_heads;
    c.k_eq_v = k_eq_v || layers.full_k_eq_v;
    c.layers.full_head_dim = 0;
    c.layers.full_kv_heads = 0;
    c.layers.full_k_eq_v = false;
    return c;
  }
  // Linear attention layers among layers 0..n-1 (n <= n_layers).
  constexpr uint32_t linear_layers_before(uint32_t n) const {
    uint32_t s = 0;
    for (uint32_t i = 0; layers.linear.count && i < n && i < kMaxConfigLayers; ++i) s += layers.linear.get(i) ? 1 : 0;
    return s;
  }
  // Sliding layers among layers 0..n-1 (n <= n_layers), counted without a loop where the kinds
  // are a pattern.
  constexpr uint32_t sliding_layers_before(uint32_t n) const {
    if (window == 0) return 0;
    if (layers.sliding.count) {
      uint32_t s = 0;
      for (uint32_t i = 0; i < n && i < kMaxConfigLayers; ++i) s += layers.sliding.get(i) ? 1 : 0;
      return s;
    }
    if (layers.sliding_pattern) return n - n / layers.sliding_pattern;
    return n;
  }

  // Layer i's RoPE: none on a NoPE layer; else the model's at the layer's base. A sliding layer
  // with a base of its own (Gemma 3's rope_local_base_freq) rotates plainly: rope_scaling is the
  // full layers' (Hugging Face's sliding_attention rope_type is "default").
  constexpr RopeConfig layer_rope(uint32_t i) const {
    RopeConfig r = rope;
    if (!layer_rotates(i)) {
      r.style = RopeStyle::kNone;
    } else if (layer_slides(i) && layers.local_rope_theta > 0.0f) {
      r.theta = layers.local_rope_theta;
      r.scaling = RopeScaling::kNone;
    } else if (layer_slides(i) && r.scaling == RopeScaling::kProportional) {
      r.scaling = RopeScaling::kNone;  // Gemma 4: proportional RoPE is its full layers'
    }
    return r;
  }

  // Layer i alone: one layer (n_layers 1) of layer i's kind (its window or none, its RoPE or
  // none, its base), with no per-layer kinds left.
  constexpr Config layer_alone(uint32_t i) const {
    Config c = *this;
    c.window = layer_slides(i) ? window : 0;
    c.window_symmetric = layer_slides(i) && window_symmetric;
    c.sink_tokens = layer_slides(i) ? sink_tokens : 0;
    c.rope = layer_rope(i);
    if (!layer_slides(i)) c = c.full_shape();
    c.layers = LayerKinds{};
    if (layer_is_linear(i)) {
      c.layers.linear.count = 1;
      c.layers.linear.set(0, true);
    }
    c.n_layers = 1;
    return c;
  }

  // Layer i as it runs alone, and, when it shares KV, the layer whose cache it reads before it:
  // two layers of layer i's kind, the second reading the first's cache.
  constexpr Config layer_with_owner(uint32_t i) const {
    Config c = layer_alone(i);
    if (layer_shares_kv(i)) {
      c.n_layers = 2;
      c.layers.kv_shared_layers = 1;
    }
    return c;
  }

  // The first n layers only (n <= n_layers): the per-layer lists shortened with them.
  constexpr void keep_first_layers(uint32_t n) {
    if (n == 0 || n >= n_layers) return;
    // The sharing layers are the last ones: those kept keep reading the caches they read.
    const uint32_t first_shared = first_kv_shared_layer();
    layers.kv_shared_layers = n > first_shared && layers.kv_shared_layers ? n - first_shared : 0;
    n_layers = n;
    if (layers.sliding.count > n) layers.sliding.count = n;
    if (layers.rope.count > n) layers.rope.count = n;
    if (layers.linear.count > n) layers.linear.count = n;
  }

  // The logit scale: explicit scale, else 1/sqrt(query_pre_attn_scalar or head_dim); MLA's from
  // its query head (nope + rope), times mscale(factor, mscale_all_dim)² where the RoPE sets it.
  float logit_scale() const;

  constexpr void set_name(const char* s) {
    uint32_t i = 0;
    for (; s && s[i] && i < kMaxNameLength; ++i) name[i] = s[i];
    for (; i <= kMaxNameLength; ++i) name[i] = '\0';
  }
};

// Limits the plan is built for (and kMaxHeadDim, headway/detail/attention_policy.hpp, which the kernels
// share); validate() enforces them.
inline constexpr uint32_t kMaxHeads = 1024;

// Parses the compact spec string, e.g.
//   "d_model=4096 heads=32 kv_heads=8 head_dim=128 ctx=4096 layers=32 rope_theta=10000 window=4096 softcap=50"
// Keys (space- or comma-separated key=value): name, d_model, heads, kv_heads, head_dim, ctx,
// layers, rope (none|neox|gptj), rope_theta, rope_dim, window, softcap, query_pre_attn_scalar,
// scale, causal (0|1), kv_dtype (f32|f16|bf16|q8_0|q4_0), kv_rotation (none|hadamard), qkv_bias,
// o_bias, qk_norm, output_gate, v_norm, k_eq_v (0|1), and how layers differ (LayerKinds):
// sliding_pattern (N >= 1), nope_interval (N >= 1), rope_local_theta, sinks (0|1), layer_types
// (one letter per layer: s sliding, f full; e.g. sfsf), rope_layers (one digit per layer: 1 RoPE,
// 0 none; e.g. 1110), sink_tokens (N, with a window), alibi (0|1), alibi_max_bias,
// alibi_times_scale (0|1) and window_symmetric (0|1, with causal=0 and a window); shared KV and
// the full layers' own head shape (Gemma 3n / 4): kv_shared_layers, full_head_dim, full_kv_heads
// and full_k_eq_v (0|1); multi-head
// latent attention (MlaShape): kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and
// v_head_dim, which also make head_dim, kv_heads and rope_dim where the spec does not; Gated
// DeltaNet layers (GatedDeltaShape): linear_layers (one digit per layer: 1 linear, 0 attention),
// linear_key_heads, linear_value_heads, linear_key_head_dim, linear_value_head_dim and
// linear_conv_kernel. rope_theta or
// rope_dim alone turn on NeoX RoPE. The model around the blocks (ModelConfig): vocab and ffn
// (either alone makes a decoder of RMSNorm and SwiGLU), norm (rms|layer), mlp (swiglu|gelu),
// norm_eps and tie (0|1). Unknown keys and bad numbers are errors that name the key.
// Part of the core library: no allocation, no locale, usable bare-metal. Does not validate.
Result<Config> parse_spec(const char* spec);

// Checks every rule of the config and returns the first failure, with a message that names the
// values and says how to fix it. Pure; never allocates.
Status validate(const Config& config);

// Checks layer i of the config as it runs alone (config.layer_alone(i)): a model whose other
// layers headway cannot run (Qwen3.5's linear attention) still lends the ones it can. A layer
// past n_layers or one headway does not run is named by its index.
Status validate_layer(const Config& config, uint32_t i);

}  // namespace headway
