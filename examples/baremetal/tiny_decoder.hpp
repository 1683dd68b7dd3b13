// The whole decoder the Cortex-M firmware runs (decoder_run.cc), fixed at compile time. Shared
// with the program that draws its weights and prompt and computes the expected greedy tokens and
// logits on the build machine (tests/baremetal/decoder_golden_gen.cc → decoder_golden.h).
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/plan.hpp"

namespace tiny_decoder {

// A Llama-shaped decoder (Qwen2's q/k/v biases): token embedding [256, 128] → 2 blocks (RMSNorm,
// attention of 4 query heads over 2 kv heads of head_dim 64 with NeoX RoPE, RMSNorm, SwiGLU MLP of
// 256) → final RMSNorm → its own LM head [256, 128]. Layer 0 slides over 8 keys, layer 1 attends
// to all (Gemma 2's alternation, sliding_pattern 2): layer 0's ring (8 + max_tokens − 1 = 15 rows)
// is shorter than the 28 tokens the firmware runs, so it wraps; layer 1 keeps max_seq rows.
// K/V cached in f16.
constexpr headway::Config config() {
  headway::Config c;
  c.set_name("tiny-decoder");
  c.d_model = 128;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.max_seq = 32;
  c.n_layers = 2;
  c.rope.style = headway::RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = 8;
  c.layers.sliding_pattern = 2;
  c.causal = true;
  c.qkv_bias = true;
  c.kv_dtype = headway::DType::kF16;
  c.model.vocab_size = 256;
  c.model.intermediate_size = 256;
  c.model.norm = headway::NormKind::kRms;
  c.model.norm_eps = 1e-5f;
  c.model.mlp = headway::MlpKind::kSwiGlu;
  c.model.tie_word_embeddings = false;
  return c;
}

// Every matrix (embedding, Q/K/V/O, gate/up/down, LM head) stays in the image as q8_0 blocks,
// read in place (flash on a board); the arena holds the norms and biases (f32), the caches and
// the activations. Prompts run in chunks of 8 tokens.
constexpr headway::PlanOptions options() {
  headway::PlanOptions o;
  o.max_tokens = 8;
  o.weight_dtype = headway::DType::kQ8_0;
  o.weights_in_arena = false;
  return o;
}

// A prefill of kPromptTokens (two chunks), then kDecodeSteps decodes, each of the greedy token the
// logits before it chose: kDecodeSteps + 1 greedy tokens, and as many rows of logits.
inline constexpr uint32_t kPromptTokens = 12;
inline constexpr uint32_t kDecodeSteps = 16;
inline constexpr uint32_t kGreedyTokens = kDecodeSteps + 1;
inline constexpr uint64_t kWeightSeed = 7202;  // its greedy choices lead by 0.05 or more
inline constexpr uint64_t kPromptSeed = 7300;

}  // namespace tiny_decoder
