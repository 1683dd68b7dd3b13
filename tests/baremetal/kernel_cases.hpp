// The attention cases the Cortex-M harness (kernel_harness.cc) runs, shared with the host program
// that computes their reference outputs (golden_gen.cc). Inputs come from exact_input() on both
// sides: integer arithmetic only, so the target sees bit for bit what the reference saw
// (test_rng.hpp's normal() goes through libm, whose last bits differ between glibc and newlib).
#pragma once

#include <cstdint>

#include "headway/config.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {
namespace baremetal {

using Kv = DType;  // the K/V storage of a case

struct KernelCase {
  const char* name;
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
  bool causal;
  uint32_t window;
  float softcap;
  Kv kv;
  uint64_t seed;
};

// head_dim 64 and 128 (specialized), 80 and 50 (generic); MHA, GQA, MQA; causal, window,
// softcap; rows that see no key; length 1; a decode long enough for the split-KV path
// (t_kv >= 2 · kAttnKvChunk with few tasks).
inline constexpr KernelCase kKernelCases[] = {
    {"prefill d64 MHA causal f32", 40, 40, 2, 2, 64, true, 0, 0.0f, Kv::kF32, 1},
    {"prefill d128 GQA4 causal f16", 24, 24, 4, 1, 128, true, 0, 0.0f, Kv::kF16, 2},
    {"decode d128 GQA2 f16", 1, 70, 4, 2, 128, true, 0, 0.0f, Kv::kF16, 3},
    {"decode d64 GQA4 window 16 bf16", 2, 100, 8, 2, 64, true, 16, 0.0f, Kv::kBF16, 4},
    {"generic d80 MQA causal window 9 bf16", 5, 33, 3, 1, 80, true, 9, 0.0f, Kv::kBF16, 5},
    {"generic d50 bidirectional softcap 5 f32", 17, 17, 2, 2, 50, false, 0, 5.0f, Kv::kF32, 6},
    {"fully masked rows d64 (t_q > t_kv, causal)", 6, 3, 2, 1, 64, true, 0, 0.0f, Kv::kF32, 7},
    {"length 1 d128", 1, 1, 2, 2, 128, true, 0, 0.0f, Kv::kF16, 8},
    {"split-KV decode d64 t_kv 1100 f16", 1, 1100, 2, 1, 64, true, 0, 0.0f, Kv::kF16, 9},
};
inline constexpr uint32_t kKernelCaseCount = sizeof(kKernelCases) / sizeof(kKernelCases[0]);

// A value in [-2, 2] in steps of 1/1024: exact in f32, f16 and (mostly rounded) bf16.
inline float exact_input(Rng& rng) {
  const int32_t units = static_cast<int32_t>((rng.next() >> 40) % 4097) - 2048;
  return static_cast<float>(units) * (1.0f / 1024.0f);
}

// Q, K, V of a case in that order, from its own seed: q [t_q, n_heads, d], k and v
// [t_kv, n_kv_heads, d], all f32 before K/V are rounded to their storage type.
template <class Sink>
void generate_inputs(const KernelCase& c, Sink&& sink) {
  Rng rng(c.seed);
  const uint64_t nq = uint64_t{c.t_q} * c.n_heads * c.head_dim;
  const uint64_t nkv = uint64_t{c.t_kv} * c.n_kv_heads * c.head_dim;
  for (uint64_t i = 0; i < nq; ++i) sink(0, i, exact_input(rng));
  for (uint64_t i = 0; i < nkv; ++i) sink(1, i, exact_input(rng));
  for (uint64_t i = 0; i < nkv; ++i) sink(2, i, exact_input(rng));
}

}  // namespace baremetal
}  // namespace test
}  // namespace headway
