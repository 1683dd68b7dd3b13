// The named benchmark cases of `headway bench`: attention shapes of the models headway targets,
// each a prefill (causal, t_q = t_kv) or a decode step (t_q = 1 against a filled cache).
// Names read as what they are: <kind>-t<t_kv>-h<n_heads>x<n_kv_heads>-d<head_dim>-<kv dtype>
// (f32, f16, or ggml's q8_0 / q4_0 blocks),
// with a model prefix where the shape is one model's (smollm2-135m-decode-t2048-h9x3-d64-f16)
// and an -alibi suffix where the logits carry ALiBi's biases (the standard slopes).
#pragma once

#include <cstdint>
#include <span>

#include "headway/config.hpp"

namespace headway::bench {

// Which roof binds a case is a matter of its FLOP per byte and the machine's roofs, not of its
// kind (bench/peak.hpp, attainable()): prefill lies far above any ridge, decode near or below it.
enum class CaseKind : uint8_t {
  kPrefill = 0,  // t_q = t_kv, causal: every K/V tile serves a block of queries
  kDecode,       // t_q = 1 against a filled cache: each K/V byte serves the group's query heads
};
const char* case_kind_name(CaseKind kind);  // "prefill", "decode"

struct BenchCase {
  const char* name;
  const char* about;  // what the shape stands for
  CaseKind kind;
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
  DType kv_dtype;
  bool causal;
  bool alibi = false;
};

std::span<const BenchCase> bench_cases();
const BenchCase* find_bench_case(const char* name);  // nullptr when there is none of that name

// Query-key pairs the mask lets through (bottom-right aligned causal mask): the work done.
double visible_pairs(const BenchCase& c);
// 4 · head_dim · n_heads · visible pairs: Q·Kᵀ and P·V, a multiply and an add each.
double case_flops(const BenchCase& c);
// Unique bytes of K and V: 2 · t_kv · n_kv_heads · head_dim · sizeof(kv_dtype).
uint64_t case_kv_bytes(const BenchCase& c);

}  // namespace headway::bench
