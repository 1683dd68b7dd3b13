#include "headway/presets.hpp"

namespace headway {
namespace presets {
namespace {

constexpr Entry kAll[] = {
    {"bert-base", bert_base, "encoder, bidirectional, MHA 12 × 64"},
    {"bert-large", bert_large, "encoder, bidirectional, MHA 16 × 64"},
    {"gpt2", gpt2_small, "GPT-2 small, MHA 12 × 64, learned positions"},
    {"llama-2-7b", llama2_7b, "MHA 32 × 128"},
    {"llama-2-70b", llama2_70b, "GQA 64/8 × 128"},
    {"mistral-7b", mistral_7b, "GQA 32/8 × 128, sliding window 4096 (v0.1)"},
    {"llama-3-8b", llama3_8b, "GQA 32/8 × 128, rope_theta 500000"},
    {"llama-3-70b", llama3_70b, "GQA 64/8 × 128"},
    {"llama-3.2-1b", llama32_1b, "GQA 32/8 × 64"},
    {"gemma-2b", gemma_2b, "MQA 8/1 × 256"},
    {"gemma-7b", gemma_7b, "MHA 16 × 256 over d_model 3072 (query width 4096)"},
    {"gemma-2-2b", gemma2_2b, "GQA 8/4 × 256, softcap 50, window 4096 on even layers"},
    {"gemma-3-270m", gemma3_270m, "MQA 4/1 × 256, 5 of 6 layers sliding 512 (base 10000), q/k norm"},
    {"gemma-3-1b", gemma3_1b, "MQA 4/1 × 256, 5 of 6 layers sliding 512 (base 10000), q/k norm"},
    {"qwen2.5-0.5b", qwen25_05b, "GQA 14/2 × 64, qkv bias"},
    {"qwen3-0.6b", qwen3_06b, "GQA 16/8 × 128 over d_model 1024, q/k norm"},
    {"qwen3-1.7b", qwen3_17b, "GQA 16/8 × 128, q/k norm"},
    {"smollm3-3b", smollm3_3b, "GQA 16/4 × 128, no RoPE on every 4th layer"},
    {"gpt-oss-20b", gpt_oss_20b, "GQA 64/8 × 64, even layers sliding 128, YaRN, sink logits"},
    {"smollm2-135m", smollm2_135m, "GQA 9/3 × 64"},
    {"tinyllama-1.1b", tinyllama_1b, "GQA 32/4 × 64"},
    {"phi-2", phi2, "MHA 32 × 80, partial rotary 32"},
    {"phi-3-mini", phi3_mini, "MHA 32 × 96, window 2047"},
    {"bloom-560m", bloom_560m, "MHA 16 × 64, ALiBi, biases"},
    {"mpt-7b", mpt_7b, "MHA 32 × 128, ALiBi"},
};

bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

}  // namespace

const Entry* all(size_t* count) {
  *count = sizeof(kAll) / sizeof(kAll[0]);
  return kAll;
}

const Entry* find(const char* name) {
  if (name == nullptr) return nullptr;
  for (const Entry& e : kAll) {
    if (same(e.name, name)) return &e;
  }
  return nullptr;
}

}  // namespace presets
}  // namespace headway
