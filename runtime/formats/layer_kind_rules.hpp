// What an architecture implies about its layers where the file does not spell it out, shared by
// the config.json reader (hf_layer_kinds.cc) and the GGUF reader (gguf_meta.cc) so that a model
// plans alike from either file. The values are Hugging Face's config defaults; llama.cpp applies
// the same ones per architecture (its set_swa_pattern(N): layer i slides unless i % N == N - 1,
// which is LayerKinds::sliding_pattern).
#pragma once

#include <cstdint>
#include <string_view>

#include "headway/config.hpp"

namespace headway::formats {

// Gemma2Config, llama.cpp's gemma2: layer i slides when i is even; a window of 4096 where the
// file names none.
inline constexpr uint32_t kGemma2SlidingPattern = 2;
inline constexpr uint32_t kGemma2Window = 4096;
// Gemma3TextConfig's defaults, llama.cpp's gemma3: every sixth layer full; the sliding layers
// rotate at base 10000 (rope_local_base_freq; GGUF's rope.freq_base_swa).
inline constexpr uint32_t kGemma3SlidingPattern = 6;
inline constexpr float kGemma3LocalRopeTheta = 10000.0f;
// Gemma3TextConfig's full layers' base where config.json names no rope_theta.
inline constexpr float kGemma3RopeTheta = 1000000.0f;
// ModernBertConfig's defaults: layer i is global (full) when i % 3 == 0 (global_attn_every_n_layers),
// the others local with a window of local_attention = 128 keys in all (|i − j| <= 64); global
// layers rotate at base 160000 (global_rope_theta), local ones at 10000 (local_rope_theta).
inline constexpr uint32_t kModernBertGlobalEvery = 3;
inline constexpr uint32_t kModernBertLocalAttention = 128;
inline constexpr float kModernBertGlobalRopeTheta = 160000.0f;
inline constexpr float kModernBertLocalRopeTheta = 10000.0f;

// Cohere2Config's sliding_window_pattern, llama.cpp's cohere2: every fourth layer full.
inline constexpr uint32_t kCohere2SlidingPattern = 4;
// GptOssConfig's default layer_types, llama.cpp's gpt-oss: even layers slide.
inline constexpr uint32_t kGptOssSlidingPattern = 2;
// The Qwen2-VL and Qwen2.5-VL language models (their wrappers and text configs).
inline bool is_qwen_vl(std::string_view model_type) {
  for (std::string_view t : {"qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"}) {
    if (model_type == t) return true;
  }
  return false;
}

// max_window_layers where config.json does not give it: Qwen2Config's, Qwen3Config's and
// Qwen2MoeConfig's 28, Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's 80; 0 for model types
// without the key (every layer then slides).
inline uint32_t default_max_window_layers(std::string_view model_type) {
  if (is_qwen_vl(model_type)) return 80;
  if (model_type == "qwen2" || model_type == "qwen3" || model_type == "qwen2_moe") return 28;
  return 0;
}

// Model types whose config defaults use_sliding_window to false, so that their sliding_window
// applies only where config.json sets the flag (Qwen2Config, Qwen3Config, their MoE and VL
// configs, SmolLM3Config); every other model's sliding_window applies as written.
inline bool sliding_window_off_by_default(std::string_view model_type) {
  for (std::string_view t : {"qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "smollm3"}) {
    if (model_type == t) return true;
  }
  return is_qwen_vl(model_type);
}

inline bool is_gemma3(std::string_view model_type) { return model_type == "gemma3" || model_type == "gemma3_text"; }

// Qwen3.5 (dense and MoE, their wrappers and text configs) and Qwen3-Next: gated attention layers
// (Qwen3_5Attention: Wq gives each head's query and gate, q/k norms scale by 1 + w) among linear
// attention ones. Their configs' defaults: where config.json lists no layer_types, every
// full_attention_interval-th layer (4) is full attention and the rest linear; head_dim 256; a
// quarter of it rotated (partial_rotary_factor 0.25).
inline bool is_gated_qwen(std::string_view model_type) {
  for (std::string_view t : {"qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_next"}) {
    if (model_type == t) return true;
  }
  return false;
}
// Gemma 3n and Gemma 4 (their wrappers and text configs): per-layer attention; Gemma4TextConfig's
// head_dim 256 and global_head_dim 512, its full layers' RoPE proportional over a quarter of the
// head at base 1e6, the sliding ones' plain at 10000.
inline bool is_gemma3n(std::string_view model_type) { return model_type == "gemma3n" || model_type == "gemma3n_text"; }
inline bool is_gemma4(std::string_view model_type) { return model_type == "gemma4" || model_type == "gemma4_text"; }
inline constexpr uint32_t kGemma4HeadDim = 256;
inline constexpr uint32_t kGemma4GlobalHeadDim = 512;
inline constexpr float kGemma4RopeTheta = 1000000.0f;
inline constexpr double kGemma4RotaryFraction = 0.25;
inline constexpr float kGemma4LocalRopeTheta = 10000.0f;

inline constexpr uint32_t kGatedQwenFullInterval = 4;
inline constexpr uint32_t kGatedQwenHeadDim = 256;
inline constexpr double kGatedQwenRotaryFraction = 0.25;
// Qwen3_5TextConfig's and Qwen3NextConfig's Gated DeltaNet defaults (linear_*).
inline constexpr GatedDeltaShape kGatedQwenDeltaNet{16, 32, 128, 128, 4, false};

// The sliding layers' RoPE base, kept only where it differs from the full layers'.
constexpr void set_local_rope_theta(float theta, Config* cfg) {
  if (theta != cfg->rope.theta) cfg->layers.local_rope_theta = theta;
}

// Cohere2: only the sliding layers rotate (Cohere2Attention; llama.cpp's cohere2 graph), as a
// list of n_layers entries, or none where every layer slides. The caller checks first that
// n_layers <= kMaxConfigLayers, and words the error for its file.
constexpr void rotate_sliding_layers_only(Config* cfg) {
  bool all_slide = true;
  for (uint32_t i = 0; i < cfg->n_layers; ++i) {
    const bool slides = cfg->layer_slides(i);
    cfg->layers.rope.set(i, slides);
    all_slide = all_slide && slides;
  }
  cfg->layers.rope.count = all_slide ? 0 : cfg->n_layers;
}

}  // namespace headway::formats
