// The model the Cortex-M firmware (main.cc) runs, fixed at compile time. Shared with the program
// that generates its weights, inputs and expected outputs on the build machine
// (tests/baremetal/firmware_golden_gen.cc → firmware_golden.h).
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/plan.hpp"

namespace tiny {

// Two attention blocks (a residual stack): d_model 128 into 4 query heads over 2 kv heads of
// head_dim 64 (the specialized kernels; q width 256 ≠ d_model, as Gemma's), q/k/v biases, NeoX
// RoPE, a sliding window of 12 keys, K/V cached in f16. The window ring (window + max_tokens − 1
// = 27 rows) is shorter than the 40 tokens the firmware runs, so decode wraps it.
constexpr headway::Config config() {
  headway::Config c;
  c.set_name("tiny-gqa-window");
  c.d_model = 128;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.max_seq = 64;
  c.n_layers = 2;
  c.rope.style = headway::RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = 12;
  c.causal = true;
  c.qkv_bias = true;
  c.kv_dtype = headway::DType::kF16;
  return c;
}

// Weights stay where the image keeps them (flash on a board): f16, borrowed, not copied.
constexpr headway::PlanOptions options() {
  headway::PlanOptions o;
  o.max_tokens = 16;
  o.weight_dtype = headway::DType::kF16;
  o.weights_in_arena = false;
  return o;
}

inline constexpr uint32_t kPromptTokens = 16;
inline constexpr uint32_t kDecodeSteps = 24;
inline constexpr uint32_t kTokens = kPromptTokens + kDecodeSteps;
inline constexpr uint64_t kWeightSeed = 7001;  // layer l: seed + l
inline constexpr uint64_t kInputSeed = 7100;

}  // namespace tiny
