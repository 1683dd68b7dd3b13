// The multi-head latent attention stack the Cortex-M firmware runs (mla_run.cc), fixed at compile
// time. Shared with the program that draws its weights and inputs and computes the expected
// outputs on the build machine (tests/baremetal/mla_golden_gen.cc → mla_golden.h).
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "headway/plan.hpp"

namespace tiny_mla {

// Two MLA blocks (a residual stack, as the Session runs them), DeepSeek-V3's layout at a small
// size: d_model 128, 4 query heads of qk_nope 32 + qk_rope 16, a query latent of 48 (q_lora_rank,
// RMS-normed), a kv latent of 64 (kv_lora_rank, RMS-normed), value heads of 32, GPT-J
// (interleaved) RoPE on the 16 rope values. The cache holds one row of 16 + 64 = 80 values a token
// (head_dim 80, one kv head), K and V at once, in f16. A small kv_lora_rank: the 288-value row
// (MiniCPM3) is held against the kernels in the kernel harness (mla_cases.hpp); a Session of it
// would put ~0.5 MB of f16 weights a layer into the M55's 2 MiB of constants.
//
// kSpec is the same model as a spec string (parse_spec fills head_dim 80, kv_heads 1 and
// rope_dim 16 from the MLA keys); the firmware parses it and checks that it plans what config()
// plans.
inline constexpr const char* kSpec =
    "name=tiny-mla d_model=128 heads=4 ctx=32 layers=2 rope=gptj rope_theta=10000 kv_dtype=f16 kv_lora_rank=64 "
    "q_lora_rank=48 qk_nope_head_dim=32 qk_rope_head_dim=16 v_head_dim=32";

constexpr headway::Config config() {
  headway::Config c;
  c.set_name("tiny-mla");
  c.d_model = 128;
  c.n_heads = 4;
  c.n_kv_heads = 1;
  c.head_dim = 80;  // kv_lora_rank + qk_rope_head_dim: the latent row
  c.max_seq = 32;
  c.n_layers = 2;
  c.rope.style = headway::RopeStyle::kGptj;
  c.rope.theta = 10000.0f;
  c.rope.rotary_dim = 16;  // qk_rope_head_dim, at the start of each row
  c.causal = true;
  c.kv_dtype = headway::DType::kF16;
  c.mla.kv_lora_rank = 64;
  c.mla.q_lora_rank = 48;
  c.mla.qk_nope_head_dim = 32;
  c.mla.qk_rope_head_dim = 16;
  c.mla.v_head_dim = 32;
  return c;
}

// Weights stay where the image keeps them (flash on a board): f16, borrowed, not copied.
constexpr headway::PlanOptions options() {
  headway::PlanOptions o;
  o.max_tokens = 8;
  o.weight_dtype = headway::DType::kF16;
  o.weights_in_arena = false;
  return o;
}

// A prefill of kFirstChunk tokens, a second chunk of kSecondChunk after them (queries at positions
// past 0), then kDecodeSteps single-token steps.
inline constexpr uint32_t kFirstChunk = 6;
inline constexpr uint32_t kSecondChunk = 4;
inline constexpr uint32_t kDecodeSteps = 10;
inline constexpr uint32_t kTokens = kFirstChunk + kSecondChunk + kDecodeSteps;
inline constexpr uint64_t kWeightSeed = 7401;  // layer l: seed + l
inline constexpr uint64_t kInputSeed = 7500;

}  // namespace tiny_mla
