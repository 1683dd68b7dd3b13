// Built-in model configs with their published numbers, as named constexpr factories.
#pragma once

#include <cstddef>

#include "headway/config.hpp"

namespace headway {
namespace presets {

constexpr Config make(const char* name, uint32_t d_model, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                      uint32_t max_seq, uint32_t n_layers) {
  Config c;
  c.set_name(name);
  c.d_model = d_model;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  c.max_seq = max_seq;
  c.n_layers = n_layers;
  return c;
}

constexpr Config with_rope(Config c, float theta, uint32_t rotary_dim = 0, RopeStyle style = RopeStyle::kNeox) {
  c.rope.style = style;
  c.rope.theta = theta;
  c.rope.rotary_dim = rotary_dim;
  return c;
}

// Encoders and learned-position decoders.
constexpr Config bert_base() {
  Config c = make("bert-base", 768, 12, 12, 0, 512, 12);
  c.causal = false;
  c.qkv_bias = c.o_bias = true;
  return c;
}
constexpr Config bert_large() {
  Config c = make("bert-large", 1024, 16, 16, 0, 512, 24);
  c.causal = false;
  c.qkv_bias = c.o_bias = true;
  return c;
}
constexpr Config gpt2_small() {
  Config c = make("gpt2", 768, 12, 12, 0, 1024, 12);
  c.qkv_bias = c.o_bias = true;
  return c;
}

// Llama family (NeoX rotate-half RoPE).
constexpr Config llama2_7b() { return with_rope(make("llama-2-7b", 4096, 32, 32, 0, 4096, 32), 10000.0f); }
constexpr Config llama2_70b() { return with_rope(make("llama-2-70b", 8192, 64, 8, 0, 4096, 80), 10000.0f); }
constexpr Config llama3_8b() { return with_rope(make("llama-3-8b", 4096, 32, 8, 0, 8192, 32), 500000.0f); }
constexpr Config llama3_70b() { return with_rope(make("llama-3-70b", 8192, 64, 8, 0, 8192, 80), 500000.0f); }
constexpr Config llama32_1b() {
  Config c = with_rope(make("llama-3.2-1b", 2048, 32, 8, 64, 131072, 16), 500000.0f);
  c.rope.scaling = RopeScaling::kLlama3;  // factor 32 over an original context of 8192
  c.rope.factor = 32.0f;
  c.rope.low_freq_factor = 1.0f;
  c.rope.high_freq_factor = 4.0f;
  c.rope.original_max_seq = 8192;
  return c;
}
constexpr Config tinyllama_1b() { return with_rope(make("tinyllama-1.1b", 2048, 32, 4, 0, 2048, 22), 10000.0f); }
constexpr Config smollm2_135m() { return with_rope(make("smollm2-135m", 576, 9, 3, 0, 8192, 30), 100000.0f); }
constexpr Config mistral_7b() {
  Config c = with_rope(make("mistral-7b", 4096, 32, 8, 0, 32768, 32), 10000.0f);
  c.window = 4096;  // v0.1
  return c;
}

// Gemma: decoupled head_dim (7B: 16 × 256 = 4096 query width over d_model 3072).
constexpr Config gemma_2b() { return with_rope(make("gemma-2b", 2048, 8, 1, 256, 8192, 18), 10000.0f); }
constexpr Config gemma_7b() { return with_rope(make("gemma-7b", 3072, 16, 16, 256, 8192, 28), 10000.0f); }
constexpr Config gemma2_2b() {
  Config c = with_rope(make("gemma-2-2b", 2304, 8, 4, 256, 8192, 26), 10000.0f);
  c.window = 4096;
  c.layers.sliding_pattern = 2;  // even layers slide, odd ones see everything
  c.softcap = 50.0f;
  c.query_pre_attn_scalar = 256.0f;
  return c;
}
// Gemma 3: five of every six layers slide over 512 keys at RoPE base 10000; every sixth is full
// at base 1000000. Per-head RMS norm on q and k, scaled by 1 + weight.
constexpr Config gemma3(const char* name, uint32_t d_model, uint32_t n_layers) {
  Config c = with_rope(make(name, d_model, 4, 1, 256, 32768, n_layers), 1000000.0f);
  c.window = 512;
  c.layers.sliding_pattern = 6;
  c.layers.local_rope_theta = 10000.0f;
  c.query_pre_attn_scalar = 256.0f;
  c.qk_norm = true;
  c.qk_norm_offset = 1.0f;
  return c;
}
constexpr Config gemma3_270m() { return gemma3("gemma-3-270m", 640, 18); }
constexpr Config gemma3_1b() { return gemma3("gemma-3-1b", 1152, 26); }

// Qwen.
constexpr Config qwen25_05b() {
  Config c = with_rope(make("qwen2.5-0.5b", 896, 14, 2, 0, 32768, 24), 1000000.0f);
  c.qkv_bias = true;
  return c;
}
constexpr Config qwen3_06b() {
  Config c = with_rope(make("qwen3-0.6b", 1024, 16, 8, 128, 40960, 28), 1000000.0f);
  c.qk_norm = true;
  return c;
}
constexpr Config qwen3_17b() {
  Config c = with_rope(make("qwen3-1.7b", 2048, 16, 8, 128, 40960, 28), 1000000.0f);
  c.qk_norm = true;
  return c;
}

// SmolLM3: every fourth layer has no RoPE (NoPE).
constexpr Config smollm3_3b() {
  Config c = with_rope(make("smollm3-3b", 2048, 16, 4, 0, 65536, 36), 5000000.0f);
  c.layers.nope_interval = 4;
  return c;
}

// gpt-oss-20b (its attention layers): even layers slide over 128 keys, odd ones are full; YaRN
// RoPE (factor 32 over 4096, beta 32 / 1, no truncation), q/k/v and output biases, learned sink
// logits.
constexpr Config gpt_oss_20b() {
  Config c = with_rope(make("gpt-oss-20b", 2880, 64, 8, 64, 131072, 24), 150000.0f);
  c.window = 128;
  c.layers.sliding_pattern = 2;
  c.qkv_bias = c.o_bias = true;
  c.sinks = true;
  c.rope.scaling = RopeScaling::kYarn;
  c.rope.factor = 32.0f;
  c.rope.original_max_seq = 4096;
  c.rope.yarn_truncate = false;
  return c;
}

// ALiBi in place of RoPE: BLOOM (q/k/v and output biases), MPT (no biases).
constexpr Config bloom_560m() {
  Config c = make("bloom-560m", 1024, 16, 16, 0, 2048, 24);
  c.alibi = true;
  c.qkv_bias = c.o_bias = true;
  return c;
}
constexpr Config mpt_7b() {
  Config c = make("mpt-7b", 4096, 32, 32, 0, 2048, 32);
  c.alibi = true;
  return c;
}

// Phi: Phi-2 rotates 32 of its 80 dims (partial_rotary_factor 0.4).
constexpr Config phi2() {
  Config c = with_rope(make("phi-2", 2560, 32, 32, 0, 2048, 32), 10000.0f, 32);
  c.qkv_bias = c.o_bias = true;
  return c;
}
constexpr Config phi3_mini() {
  Config c = with_rope(make("phi-3-mini", 3072, 32, 32, 0, 4096, 32), 10000.0f);
  c.window = 2047;
  return c;
}

struct Entry {
  const char* name;
  Config (*make)();
  const char* note;
};

// Every built-in preset, in a stable order. Names are what `headway plan --preset` takes.
const Entry* all(size_t* count);
// nullptr when no preset has this name.
const Entry* find(const char* name);

}  // namespace presets
}  // namespace headway
