// GGUF metadata → Config: the architecture's attention keys, mapped the way llama.cpp reads
// them. The byte-level walk (every length checked) is runtime/formats/gguf_reader.
#include <cmath>
#include <cstring>

#include "headway/tools/model_files.hpp"
#include "runtime/formats/file_bytes.hpp"
#include "runtime/formats/gguf_gemma4.hpp"
#include "runtime/formats/gguf_reader.hpp"
#include "runtime/formats/layer_kind_rules.hpp"

namespace headway {
namespace {

namespace gguf = formats::gguf;

struct ArchInfo {
  const char* name;
  RopeStyle rope;
  bool qkv_bias;
  bool o_bias;
  bool qk_norm;
  bool causal;
  // How the layers differ, as llama.cpp's hparams loader sets them for the architecture (0 and
  // false: every layer alike). A sliding architecture's layers take the window on its pattern
  // (overridden by {arch}.attention.sliding_window_pattern); with no window, every layer is full.
  uint32_t sliding_pattern = 0;
  uint32_t default_window = 0;        // the window where the file has no sliding_window
  bool window_required = false;       // no sliding_window is an error (llama.cpp requires it)
  float local_rope_theta = 0.0f;      // the sliding layers' base without rope.freq_base_swa
  bool rope_sliding_only = false;     // only sliding layers rotate (Cohere2)
  bool sinks = false;                 // learned sink logits on every layer (gpt-oss)
  uint32_t wide_scale_layers = 0;     // the layer count at which queries scale by d_model / heads
  bool yarn_truncate = true;          // YaRN's ramp rounded outwards (gpt-oss's config says false)
  bool alibi = false;                 // ALiBi in place of RoPE, max bias {arch}.attention.max_alibi_bias or 8
  bool qk_norm_across_heads = false;  // the q/k norms span all heads (OLMo 2)
  uint32_t nope_interval = 0;         // every Nth layer without RoPE (SmolLM3: 4, as llama.cpp fixes it)
  // Qwen3.5 / Qwen3-Next: gated attention (Config::output_gate) on the layers that are not linear
  // attention (attention.recurrent_layers, else all but every full_attention_interval-th, 4).
  bool gated_among_linear = false;
  // Gemma 4: per-layer attention (read_gemma4): two head shapes, shared caches, a per-layer
  // sliding_window_pattern.
  bool gemma4 = false;
};

// RoPE pairing follows llama.cpp (llama_model_rope_type), because it describes the weights as
// stored in the file: convert_hf_to_gguf.py permutes the Q/K rows of "llama" models (SmolLM3's too) so that
// ggml's normal RoPE, which rotates adjacent pairs (2i, 2i+1), reproduces HF's rotate-half. A
// llama or smollm3 GGUF therefore needs interleaved (GPT-J) pairing; the others keep HF's row order and
// rotate halves. Cohere2 rotates adjacent pairs in Hugging Face's code too (its rotate_half
// interleaves), so its GGUF keeps HF's rows and llama.cpp's normal mode.
constexpr ArchInfo kArchs[] = {
    {"llama", RopeStyle::kGptj, false, false, false, true},
    {"gemma", RopeStyle::kNeox, false, false, false, true},
    {"gemma2", RopeStyle::kNeox, false, false, false, true, formats::kGemma2SlidingPattern, formats::kGemma2Window,
     false, 0.0f, false, false, 46},
    // Gemma 3's q/k norm weights are stored with Gemma's 1 + w already added by the converter.
    {"gemma3", RopeStyle::kNeox, false, false, true, true, formats::kGemma3SlidingPattern, 0, false,
     formats::kGemma3LocalRopeTheta, false, false, 62},
    {"cohere2", RopeStyle::kGptj, false, false, false, true, formats::kCohere2SlidingPattern, 0, true, 0.0f, true,
     false, 0},
    {"gpt-oss", RopeStyle::kNeox, true, true, false, true, formats::kGptOssSlidingPattern, 0, true, 0.0f, false, true,
     0, false},
    // Gemma 4's q/k norms scale by their weight as it is (the converter adds nothing: norm_shift 0).
    {"gemma4", RopeStyle::kNeox, false, false, true, true, formats::kGemma3SlidingPattern, 0, true,
     formats::kGemma4LocalRopeTheta, false, false, 0, true, false, false, 0, false, true},
    {"qwen2", RopeStyle::kNeox, true, false, false, true},
    {"qwen3", RopeStyle::kNeox, false, false, true, true},
    // DeepSeek-V2/V3's RoPE rotates adjacent pairs in Hugging Face's code too (its complex
    // rotation); its multi-head latent attention comes from attention.kv_lora_rank (read_mla).
    {"deepseek2", RopeStyle::kGptj, false, false, false, true},
    // PLM's MLA (llama.cpp's plm graph: a full-rank q, normal RoPE on the trailing dims, scale
    // key_length^-1/2) is deepseek2's; its converter keeps Hugging Face's rows, which
    // PLMAttention rotates in adjacent pairs (rope_interleave).
    {"plm", RopeStyle::kGptj, false, false, false, true},
    // The converter stores Qwen3.5's q/k norm weights with their 1 + w added, as Gemma 3's.
    {"qwen35", RopeStyle::kNeox, false, false, true, true, 0, 0, false, 0.0f, false, false, 0, true, false, false, 0,
     true},
    {"qwen35moe", RopeStyle::kNeox, false, false, true, true, 0, 0, false, 0.0f, false, false, 0, true, false, false, 0,
     true},
    {"qwen3next", RopeStyle::kNeox, false, false, true, true, 0, 0, false, 0.0f, false, false, 0, true, false, false, 0,
     true},
    {"smollm3", RopeStyle::kGptj, false, false, false, true, 0, 0, false, 0.0f, false, false, 0, true, false, false, 4},
    {"olmo2", RopeStyle::kNeox, false, false, true, true, 0, 0, false, 0.0f, false, false, 0, true, false, true},
    {"phi2", RopeStyle::kNeox, true, true, false, true},
    // Phi-3's sliding_window applies to every layer, as in Hugging Face's Phi3Attention (llama.cpp
    // turns it off for phi3 and warns that results may suffer).
    {"phi3", RopeStyle::kNeox, false, false, false, true},
    {"falcon", RopeStyle::kNeox, false, false, false, true},
    {"gptneox", RopeStyle::kNeox, true, true, false, true},
    {"gptj", RopeStyle::kGptj, false, false, false, true},
    {"gpt2", RopeStyle::kNone, true, true, false, true},
    {"bert", RopeStyle::kNone, true, true, false, false},
    // llama.cpp stores both with a fused attn_qkv tensor: planned here, and a weights file without
    // separate attn_q/attn_k/attn_v is refused by the loader, naming the tensor.
    {"bloom", RopeStyle::kNone, true, true, false, true, 0, 0, false, 0.0f, false, false, 0, true, true},
    {"mpt", RopeStyle::kNone, false, false, false, true, 0, 0, false, 0.0f, false, false, 0, true, true},
};

// The values a Config is made of, located by key in the second pass.
struct Slots {
  gguf::Kv embedding_length, head_count, head_count_kv, key_length, value_length, context_length, block_count,
      freq_base, rope_dims, sliding_window, softcap, causal, kv_lora_rank, sliding_window_pattern, freq_base_swa,
      final_softcap, recurrent_layers, full_attention_interval, nextn_predict_layers, q_lora_rank, key_length_mla,
      value_length_mla, key_length_swa, value_length_swa, rope_dims_swa, shared_kv_layers;
  // Gated DeltaNet (llama.cpp's qwen35 / qwen3next ssm.* keys, LLM_KV_SSM_*).
  gguf::Kv ssm_conv_kernel, ssm_state_size, ssm_group_count, ssm_time_step_rank, ssm_inner_size;
  // RoPE scaling (llama.cpp's LLM_KV_ROPE_SCALING_*, and the older rope.scale_linear).
  gguf::Kv scaling_type, scaling_factor, scaling_original_context, yarn_beta_fast, yarn_beta_slow, scale_linear;
  // Variants whose attention factor or ramp headway does not reproduce: their presence plans the
  // model but marks its scaling RopeScaling::kOther, which the KV cache refuses to run.
  gguf::Kv scaling_attn_factor, yarn_ext_factor, yarn_attn_factor, yarn_log_multiplier;
  gguf::Kv max_alibi_bias, clamp_kqv;
};

struct SlotName {
  const char* suffix;
  gguf::Kv Slots::*slot;
};

constexpr SlotName kSlotNames[] = {
    {"embedding_length", &Slots::embedding_length},
    {"attention.head_count", &Slots::head_count},
    {"attention.head_count_kv", &Slots::head_count_kv},
    {"attention.key_length", &Slots::key_length},
    {"attention.value_length", &Slots::value_length},
    {"context_length", &Slots::context_length},
    {"block_count", &Slots::block_count},
    {"rope.freq_base", &Slots::freq_base},
    {"rope.dimension_count", &Slots::rope_dims},
    {"attention.sliding_window", &Slots::sliding_window},
    {"attn_logit_softcapping", &Slots::softcap},
    {"final_logit_softcapping", &Slots::final_softcap},  // the model's (Gemma 2), into Config::model
    {"attention.causal", &Slots::causal},
    {"attention.kv_lora_rank", &Slots::kv_lora_rank},
    {"attention.q_lora_rank", &Slots::q_lora_rank},
    {"attention.key_length_mla", &Slots::key_length_mla},
    {"attention.value_length_mla", &Slots::value_length_mla},
    {"attention.key_length_swa", &Slots::key_length_swa},
    {"attention.value_length_swa", &Slots::value_length_swa},
    {"rope.dimension_count_swa", &Slots::rope_dims_swa},
    {"attention.shared_kv_layers", &Slots::shared_kv_layers},
    {"attention.sliding_window_pattern", &Slots::sliding_window_pattern},
    {"attention.max_alibi_bias", &Slots::max_alibi_bias},
    {"attention.clamp_kqv", &Slots::clamp_kqv},
    {"rope.freq_base_swa", &Slots::freq_base_swa},
    {"attention.recurrent_layers", &Slots::recurrent_layers},
    {"full_attention_interval", &Slots::full_attention_interval},
    {"nextn_predict_layers", &Slots::nextn_predict_layers},
    {"ssm.conv_kernel", &Slots::ssm_conv_kernel},
    {"ssm.state_size", &Slots::ssm_state_size},
    {"ssm.group_count", &Slots::ssm_group_count},
    {"ssm.time_step_rank", &Slots::ssm_time_step_rank},
    {"ssm.inner_size", &Slots::ssm_inner_size},
    {"rope.scaling.type", &Slots::scaling_type},
    {"rope.scaling.factor", &Slots::scaling_factor},
    {"rope.scaling.original_context_length", &Slots::scaling_original_context},
    {"rope.scaling.yarn_beta_fast", &Slots::yarn_beta_fast},
    {"rope.scaling.yarn_beta_slow", &Slots::yarn_beta_slow},
    {"rope.scale_linear", &Slots::scale_linear},
    {"rope.scaling.attn_factor", &Slots::scaling_attn_factor},
    {"rope.scaling.yarn_ext_factor", &Slots::yarn_ext_factor},
    {"rope.scaling.yarn_attn_factor", &Slots::yarn_attn_factor},
    {"rope.scaling.yarn_log_multiplier", &Slots::yarn_log_multiplier},
};

Status missing(const gguf::Reader& p, const char* arch, const char* suffix) {
  return Status::error(Code::kNotFound, "%s: no %s.%s (architecture %s)", p.source, arch, suffix, arch);
}

// Multi-head latent attention (Config::mla) as llama.cpp's deepseek2 loader reads it: the latent
// ranks (no q_lora_rank: a full-rank query), the query head from key_length_mla (else key_length,
// as older converters wrote it) less the rotated rope.dimension_count, the value head from
// value_length_mla (else value_length); yarn_log_multiplier as the converter writes it, 0.1 ·
// mscale_all_dim, for the logit scale (Config::logit_scale).
Status read_mla(const gguf::Reader& p, const Slots& slots, const char* arch, Config* cfg) {
  MlaShape m;
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.kv_lora_rank, 1, &m.kv_lora_rank));
  if (slots.q_lora_rank.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.q_lora_rank, 0, &m.q_lora_rank));
  if (!slots.rope_dims.present()) return missing(p, arch, "rope.dimension_count");
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.rope_dims, 1, &m.qk_rope_head_dim));
  const gguf::Kv& key = slots.key_length_mla.present() ? slots.key_length_mla : slots.key_length;
  const gguf::Kv& value = slots.value_length_mla.present() ? slots.value_length_mla : slots.value_length;
  if (!key.present()) return missing(p, arch, "attention.key_length_mla");
  if (!value.present()) return missing(p, arch, "attention.value_length_mla");
  uint32_t key_length = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, key, 1, &key_length));
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, value, 1, &m.v_head_dim));
  if (key_length <= m.qk_rope_head_dim) {
    return Status::error(Code::kInvalidArgument,
                         "%s: %s's query head of %u values (key_length_mla) leaves nothing beside its %u rotated ones "
                         "(rope.dimension_count)",
                         p.source, arch, key_length, m.qk_rope_head_dim);
  }
  m.qk_nope_head_dim = key_length - m.qk_rope_head_dim;
  cfg->mla = m;
  cfg->head_dim = m.kv_lora_rank + m.qk_rope_head_dim;
  cfg->n_kv_heads = 1;
  cfg->rope.rotary_dim = m.qk_rope_head_dim;
  if (slots.yarn_log_multiplier.present()) {
    float log_mul = 0.0f;
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.yarn_log_multiplier, true, &log_mul));
    cfg->rope.mscale_all_dim = log_mul / 0.1f;
  }
  return Status();
}

// Which layers of a Qwen3.5 / Qwen3-Next file are linear attention, as llama.cpp's loader decides:
// attention.recurrent_layers (one bool per block, the MTP blocks' included), else all but every
// full_attention_interval-th.
Status read_linear_layers(const gguf::Reader& p, const Slots& slots, const char* arch, uint32_t blocks, Config* cfg) {
  cfg->output_gate = true;
  if (blocks > kMaxConfigLayers) {
    return Status::error(Code::kUnsupported,
                         "%s: %s.block_count is %u; %s's linear attention layers are a per-layer list, and headway "
                         "holds such lists of up to %u layers",
                         p.source, arch, blocks, arch, kMaxConfigLayers);
  }
  LayerBits& linear = cfg->layers.linear;
  if (slots.recurrent_layers.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_bools(p, slots.recurrent_layers, blocks, &linear));
  } else {
    uint32_t every = formats::kGatedQwenFullInterval;
    if (slots.full_attention_interval.present()) {
      HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.full_attention_interval, 1, &every));
    }
    for (uint32_t i = 0; i < cfg->n_layers; ++i) linear.set(i, (i + 1) % every != 0);
  }
  for (uint32_t i = 0; i < cfg->n_layers; ++i) {
    if (linear.get(i)) linear.count = cfg->n_layers;  // a list only where some layer is linear
  }
  // Their shape, as llama.cpp's converter writes it: conv_kernel, state_size (the key head size),
  // group_count (the key heads), time_step_rank (the value heads) and inner_size (the value
  // heads' width), each required where a layer is linear.
  if (linear.count == 0) return Status();
  GatedDeltaShape& g = cfg->gated_delta;
  const struct {
    const gguf::Kv Slots::*slot;
    const char* suffix;
    uint32_t* out;
  } keys[] = {{&Slots::ssm_conv_kernel, "ssm.conv_kernel", &g.conv_kernel},
              {&Slots::ssm_state_size, "ssm.state_size", &g.key_head_dim},
              {&Slots::ssm_group_count, "ssm.group_count", &g.key_heads},
              {&Slots::ssm_time_step_rank, "ssm.time_step_rank", &g.value_heads}};
  for (const auto& k : keys) {
    if (!(slots.*k.slot).present()) return missing(p, arch, k.suffix);
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.*k.slot, 1, k.out));
  }
  if (!slots.ssm_inner_size.present()) return missing(p, arch, "ssm.inner_size");
  uint32_t inner = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.ssm_inner_size, 1, &inner));
  if (inner % g.value_heads != 0) {
    return Status::error(Code::kInvalidArgument,
                         "%s: %s.ssm.inner_size %u is not a whole number of %s.ssm.time_step_rank's %u value heads",
                         p.source, arch, inner, arch, g.value_heads);
  }
  g.value_head_dim = inner / g.value_heads;
  g.tiled_value_heads = true;  // the converter's order (its _reorder_v_heads); alike when the counts are equal
  return Status();
}

// The per-layer kinds of a sliding architecture, after the window, the RoPE and the layer count
// are read: llama.cpp's pattern for it, or the file's sliding_window_pattern (a period, or
// Gemma 4's one bool a layer; other architectures' arrays are refused); the sliding layers' base
// from rope.freq_base_swa, else the architecture's; Cohere2's NoPE full layers; gpt-oss's sinks.
Status read_layer_kinds(const gguf::Reader& p, const ArchInfo& info, const Slots& slots, const char* arch,
                        uint32_t blocks, Config* cfg) {
  if (info.gated_among_linear) return read_linear_layers(p, slots, arch, blocks, cfg);
  if (info.sliding_pattern == 0) return Status();
  cfg->sinks = info.sinks;
  if (!slots.sliding_window.present()) {
    if (info.window_required) return missing(p, arch, "attention.sliding_window");
    cfg->window = info.default_window;
  }
  if (cfg->window == 0) return Status();  // no window: every layer full
  cfg->layers.sliding_pattern = info.sliding_pattern;
  if (info.gemma4 && slots.sliding_window_pattern.present()) {
    HEADWAY_RETURN_IF_ERROR(formats::read_swa_layers(p, slots.sliding_window_pattern, arch, blocks, cfg));
  } else if (slots.sliding_window_pattern.present()) {
    if (slots.sliding_window_pattern.type == gguf::kArray) {
      return Status::error(Code::kUnsupported,
                           "%s: %s.attention.sliding_window_pattern is an array (one entry per layer); "
                           "headway reads it as a period, an integer N (every Nth layer full)",
                           p.source, arch);
    }
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.sliding_window_pattern, 1, &cfg->layers.sliding_pattern));
  }
  float local_theta = info.local_rope_theta;
  if (slots.freq_base_swa.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.freq_base_swa, false, &local_theta));
  }
  if (local_theta > 0.0f) formats::set_local_rope_theta(local_theta, cfg);
  if (info.rope_sliding_only) {
    if (cfg->n_layers > kMaxConfigLayers) {
      return Status::error(Code::kUnsupported,
                           "%s: %s.block_count is %u; %s rotates only its sliding layers, a per-layer "
                           "list, and headway holds such lists of up to %u layers",
                           p.source, arch, cfg->n_layers, arch, kMaxConfigLayers);
    }
    formats::rotate_sliding_layers_only(cfg);
  }
  return Status();
}

// Context-extension rescaling, as llama.cpp reads it: rope.scaling.type "linear" or "yarn" with
// rope.scaling.factor (or the older rope.scale_linear for linear), YaRN's original context and
// betas (llama.cpp's defaults: the file's context length, 32 and 1). ggml scales YaRN's cos and
// sin by 1 + 0.1 ln(factor), Hugging Face's default attention factor, which RopeConfig computes
// when attention_factor is 0. Llama 3's scaling travels as a rope_freqs tensor, Phi-3's LongRoPE
// factors as rope_factors_long/short tensors, not here (WeightFile::gguf_config sees them).
Status read_rope_scaling(const gguf::Reader& p, const ArchInfo& info, const Slots& slots, const char* arch,
                         uint32_t context_length, RopeConfig* rope) {
  if (!slots.scaling_type.present()) {
    // Phi-3's LongRoPE: no type, its factors in tensors (WeightFile::gguf_config), the original
    // context and the attention factor here.
    if (slots.scaling_original_context.present()) {
      HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.scaling_original_context, 1, &rope->original_max_seq));
    }
    if (slots.scaling_attn_factor.present()) {
      HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.scaling_attn_factor, false, &rope->attention_factor));
    }
    if (!slots.scale_linear.present()) return Status();
    float factor = 1.0f;
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.scale_linear, false, &factor));
    if (factor != 1.0f) {
      rope->scaling = RopeScaling::kLinear;
      rope->factor = factor;
    }
    return Status();
  }
  const uint8_t* text = nullptr;
  uint64_t len = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_string(p, slots.scaling_type, &text, &len));
  const gguf::KeyText type(text, len);
  const bool linear = std::strcmp(type.text, "linear") == 0, yarn = std::strcmp(type.text, "yarn") == 0;
  if (std::strcmp(type.text, "none") == 0) return Status();
  if (!linear && !yarn) {  // longrope (Phi-3 128k) and types llama.cpp may add: planned, not run
    rope->scaling = RopeScaling::kOther;
    return Status();
  }
  if (!slots.scaling_factor.present()) {
    return Status::error(Code::kNotFound, "%s: %s.rope.scaling.type is %s but there is no %s.rope.scaling.factor",
                         p.source, arch, type.text, arch);
  }
  HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.scaling_factor, false, &rope->factor));
  rope->scaling = linear ? RopeScaling::kLinear : RopeScaling::kYarn;
  if (linear) return Status();
  rope->original_max_seq = context_length;  // llama.cpp's default, as Hugging Face's
  if (slots.scaling_original_context.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.scaling_original_context, 1, &rope->original_max_seq));
  }
  if (slots.yarn_beta_fast.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.yarn_beta_fast, false, &rope->beta_fast));
  }
  if (slots.yarn_beta_slow.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.yarn_beta_slow, false, &rope->beta_slow));
  }
  rope->yarn_truncate = info.yarn_truncate;
  if (slots.scaling_attn_factor.present() || slots.yarn_ext_factor.present() || slots.yarn_attn_factor.present() ||
      slots.yarn_log_multiplier.present()) {
    rope->scaling = RopeScaling::kOther;
  }
  return Status();
}

Result<Config> parse_impl(gguf::Reader& p) {
  // Pass 1: the architecture and name (general.architecture may come after the keys it
  // prefixes, so the arch keys are matched in a second pass).
  gguf::Kv arch_kv, name_kv;
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(p, [&](const gguf::Kv& kv) {
    if (kv.is("general.architecture")) arch_kv = kv;
    if (kv.is("general.name")) name_kv = kv;
    return Status();
  }));
  if (!arch_kv.present()) {
    return Status::error(Code::kNotFound, "%s: no general.architecture key", p.source);
  }
  const uint8_t* arch_text = nullptr;
  uint64_t arch_len = 0;
  HEADWAY_RETURN_IF_ERROR(gguf::read_string(p, arch_kv, &arch_text, &arch_len));
  const gguf::KeyText arch(arch_text, arch_len);
  if (arch_len >= sizeof(arch.text) - 1) {
    return Status::error(Code::kUnsupported, "%s: architecture \"%s...\" is not one headway knows", p.source,
                         arch.text);
  }
  const ArchInfo* info = nullptr;
  for (const ArchInfo& a : kArchs) {
    if (std::strlen(a.name) == arch_len && std::memcmp(a.name, arch_text, arch_len) == 0) info = &a;
  }
  if (!info) {
    return Status::error(Code::kUnsupported,
                         "%s: architecture \"%s\" is not one headway knows (its RoPE pairing and "
                         "biases cannot be inferred)",
                         p.source, arch.text);
  }

  // Pass 2: the architecture's keys.
  Slots slots;
  HEADWAY_RETURN_IF_ERROR(gguf::for_each_kv(p, [&](const gguf::Kv& kv) {
    if (kv.key_len <= arch_len + 1 || std::memcmp(kv.key, arch_text, arch_len) != 0 || kv.key[arch_len] != '.') {
      return Status();
    }
    for (const SlotName& s : kSlotNames) {
      const uint64_t n = std::strlen(s.suffix);
      if (kv.key_len - arch_len - 1 != n || std::memcmp(kv.key + arch_len + 1, s.suffix, n) != 0) {
        continue;
      }
      gguf::Kv& slot = slots.*s.slot;
      if (slot.present()) {
        return Status::error(Code::kDataLoss, "%s: key %s appears twice", p.source,
                             gguf::KeyText(kv.key, kv.key_len).text);
      }
      slot = kv;
    }
    return Status();
  }));

  if (!slots.embedding_length.present()) return missing(p, arch.text, "embedding_length");
  if (!slots.head_count.present()) return missing(p, arch.text, "attention.head_count");
  if (!slots.context_length.present()) return missing(p, arch.text, "context_length");

  Config cfg;
  if (name_kv.present()) {
    const uint8_t* name = nullptr;
    uint64_t name_len = 0;
    HEADWAY_RETURN_IF_ERROR(gguf::read_string(p, name_kv, &name, &name_len));
    cfg.set_name(gguf::KeyText(name, name_len).text);
  } else {
    cfg.set_name(arch.text);
  }
  cfg.rope.style = info->rope;
  cfg.qkv_bias = info->qkv_bias;
  cfg.o_bias = info->o_bias;
  cfg.qk_norm = info->qk_norm;
  cfg.qk_norm_across_heads = info->qk_norm_across_heads;
  cfg.layers.nope_interval = info->nope_interval;
  cfg.causal = info->causal;

  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.embedding_length, 1, &cfg.d_model));
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.head_count, 1, &cfg.n_heads));
  HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.context_length, 1, &cfg.max_seq));
  if (slots.head_count_kv.present() && !(info->gemma4 && slots.head_count_kv.type == gguf::kArray)) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.head_count_kv, 1, &cfg.n_kv_heads));
  }
  if (slots.key_length.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.key_length, 1, &cfg.head_dim));
  }
  if (slots.value_length.present() && !slots.kv_lora_rank.present()) {
    uint32_t value_length = 0;
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.value_length, 1, &value_length));
    if (value_length != cfg.head_size()) {
      return Status::error(Code::kUnsupported,
                           "%s: %s.attention.value_length %u differs from the key head size %u; "
                           "headway needs one head size for K and V",
                           p.source, arch.text, value_length, cfg.head_size());
    }
  }
  if (slots.block_count.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.block_count, 1, &cfg.n_layers));
  }
  // The converter counts a model's multi-token-prediction blocks (Qwen3.5's MTP head, a draft
  // model) in block_count, after the model's own layers; they are not part of its stack.
  const uint32_t blocks = cfg.n_layers;
  if (slots.nextn_predict_layers.present()) {
    uint32_t nextn = 0;
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.nextn_predict_layers, 0, &nextn));
    if (nextn >= cfg.n_layers) {
      return Status::error(Code::kInvalidArgument,
                           "%s: %s.nextn_predict_layers is %u, block_count %u: no layers left for the model", p.source,
                           arch.text, nextn, cfg.n_layers);
    }
    cfg.n_layers -= nextn;
  }
  if (cfg.rope.style != RopeStyle::kNone) {
    if (slots.freq_base.present()) {
      HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.freq_base, false, &cfg.rope.theta));
    }
    if (slots.rope_dims.present()) {  // Phi-2: 32 of 80
      uint32_t dims = 0;
      HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.rope_dims, 1, &dims));
      cfg.rope.rotary_dim = dims == cfg.head_size() ? 0 : dims;
    }
    HEADWAY_RETURN_IF_ERROR(read_rope_scaling(p, *info, slots, arch.text, cfg.max_seq, &cfg.rope));
  }
  if (slots.kv_lora_rank.present()) HEADWAY_RETURN_IF_ERROR(read_mla(p, slots, arch.text, &cfg));
  if (slots.sliding_window.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_count(p, slots.sliding_window, 0, &cfg.window));
  }
  if (slots.softcap.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.softcap, true, &cfg.softcap));
  }
  if (slots.final_softcap.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.final_softcap, true, &cfg.model.final_softcap));
  }
  if (slots.causal.present()) HEADWAY_RETURN_IF_ERROR(gguf::read_bool(p, slots.causal, &cfg.causal));
  cfg.alibi = info->alibi;
  if (slots.max_alibi_bias.present()) {
    HEADWAY_RETURN_IF_ERROR(gguf::read_real(p, slots.max_alibi_bias, false, &cfg.alibi_max_bias));
  }
  if (slots.clamp_kqv.present()) {
    return Status::error(Code::kUnsupported,
                         "%s: %s.attention.clamp_kqv is set: headway's projections do not clamp q, k and v", p.source,
                         arch.text);
  }
  HEADWAY_RETURN_IF_ERROR(read_layer_kinds(p, *info, slots, arch.text, blocks, &cfg));
  if (info->gemma4) {
    const formats::Gemma4Keys keys{slots.key_length_swa, slots.value_length_swa, slots.rope_dims_swa,
                                   slots.shared_kv_layers, slots.head_count_kv};
    HEADWAY_RETURN_IF_ERROR(formats::read_gemma4(p, keys, arch.text, blocks, &cfg));
  }
  // Gemma 2 27B scales queries by 1/sqrt(d_model / n_heads) = 1/sqrt(144), not 1/sqrt(head_dim
  // 128), and Gemma 3 27B by 1/sqrt(168); GGUF has no key for it and llama.cpp recognises the
  // models by their 46 and 62 layers.
  if (info->wide_scale_layers != 0 && cfg.n_layers == info->wide_scale_layers && cfg.d_model % cfg.n_heads == 0) {
    cfg.query_pre_attn_scalar = static_cast<float>(cfg.d_model / cfg.n_heads);
  }
  return cfg;
}

// Metadata beyond this is not a model headway can use (the largest tokenizers take ~20 MiB).
constexpr size_t kMaxMetadataBytes = size_t{1} << 30;
constexpr size_t kFirstReadBytes = size_t{1} << 20;

}  // namespace

Result<Config> parse_gguf_metadata(const uint8_t* data, size_t size, const char* source) {
  if (!source) source = "model.gguf";
  if (!data && size) return Status::error(Code::kInvalidArgument, "%s: no data given", source);
  static const uint8_t kEmpty[1] = {0};
  gguf::Reader p{data ? data : kEmpty, size, size, source};
  return parse_impl(p);
}

Result<Config> load_gguf_config(const char* path) {
  size_t want = kFirstReadBytes;
  for (;;) {
    Result<formats::FileBytes> file = formats::read_file_prefix(path, want);
    if (!file.ok()) return file.status();
    const std::vector<uint8_t>& bytes = file->bytes;
    static const uint8_t kEmpty[1] = {0};
    gguf::Reader p{bytes.empty() ? kEmpty : bytes.data(), bytes.size(), file->file_size, path};
    Result<Config> config = parse_impl(p);
    if (config.ok() || p.needed == 0) return config;
    // The metadata runs past what was read: read at least 4× as much, and at least what the
    // failing read asked for.
    if (p.needed > kMaxMetadataBytes || want >= kMaxMetadataBytes) {
      return Status::error(Code::kUnsupported,
                           "%s: the GGUF metadata is larger than %zu bytes (it needs %llu); "
                           "headway reads no more",
                           path, kMaxMetadataBytes, static_cast<unsigned long long>(p.needed));
    }
    const size_t grown = want > kMaxMetadataBytes / 4 ? kMaxMetadataBytes : want * 4;
    want = grown > p.needed ? grown : static_cast<size_t>(p.needed);
  }
}

}  // namespace headway
