// Multi-head latent attention's attention call as the absorbed form makes it
// (runtime/model/mla_layer.cc), for the Cortex-M harness (kernel_harness.cc) and its golden
// generator (golden_gen.cc): one cache row a token of qk_rope + kv_lora_rank values, shared by all
// query heads (n_kv_heads 1), read as K and as V at once (the call passes v == k; KvCache aliases
// them so); the query head is as wide as the row; the logit scale is that of the model's query
// head, (qk_nope + qk_rope)^-1/2, not the row's.
//
// head_dim 288 is MiniCPM3's row (32 rope + 256 latent): its kernel scratch (attention_policy.hpp,
// group ≤ 32) is 231 KiB, within the harness's 256 KiB workspace. DeepSeek's 576 (64 + 512) needs
// 442 KiB and is left out, as the plain d512 case is. Q and K/V stay within the static buffers
// attention_cases.hpp's cases size (Q 12288 values, K/V 70400).
//
// The inputs are generate_inputs' Q and K of each case; its V is drawn but not used.
#pragma once

#include <cstdint>

#include "tests/reference/attention_cases.hpp"

namespace headway {
namespace test {
namespace baremetal {

inline constexpr uint32_t kMlaRope = 32, kMlaLatent = 256, kMlaNope = 64;  // MiniCPM3's shape
inline constexpr uint32_t kMlaRow = kMlaRope + kMlaLatent;
inline constexpr float kMlaScale = 0.102062073f;  // (64 + 32)^-1/2, as Config::logit_scale for MiniCPM3

//   {name, t_q, t_kv, n_heads, 1, 288, causal, window, softcap, scale, kv, seed}
inline constexpr AttentionCase kMlaCases[] = {
    {"MLA d288 (rope 32 + latent 256) decode, 16 heads, t_kv 100", 1, 100, 16, 1, kMlaRow, true, 0, 0.0f, kMlaScale,
     DType::kF16, 9001},
    {"MLA d288 causal prefill, 4 heads, 10 tokens", 10, 10, 4, 1, kMlaRow, true, 0, 0.0f, kMlaScale, DType::kF16, 9002},
    {"MLA d288 prefill chunk of 4 after 36 tokens, 8 heads", 4, 40, 8, 1, kMlaRow, true, 0, 0.0f, kMlaScale,
     DType::kBF16, 9003},
    {"MLA d288 decode, 8 heads, f32 rows, t_kv 65", 1, 65, 8, 1, kMlaRow, true, 0, 0.0f, kMlaScale, DType::kF32, 9004},
    {"MLA d288 q8_0 rows (9 blocks) decode, 8 heads, t_kv 70", 1, 70, 8, 1, kMlaRow, true, 0, 0.0f, kMlaScale,
     DType::kQ8_0, 9005},
};
inline constexpr uint32_t kMlaCaseCount = sizeof(kMlaCases) / sizeof(kMlaCases[0]);

// Within the buffers attention_cases.hpp's bare-metal cases size (kernel_harness.cc's statics).
constexpr bool mla_case_fits(const AttentionCase& c) {
  return c.head_dim <= kMaxHeadDim && case_kv_elems(c) <= kBareMetalMaxKvElems &&
         case_q_elems(c) <= kBareMetalMaxQElems;
}
static_assert([] {
  for (const AttentionCase& c : kMlaCases) {
    if (!mla_case_fits(c) || c.n_kv_heads != 1 || c.head_dim != kMlaRow) return false;
  }
  return true;
}());

}  // namespace baremetal
}  // namespace test
}  // namespace headway
