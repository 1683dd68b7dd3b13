#include "bench/cases.hpp"

#include <cstring>

namespace headway::bench {
namespace {

// Prefill: causal, t_q = t_kv. Decode: t_q = 1 and causal, which for one query after the whole
// cache masks nothing. Every case reads its K/V cold (bench/runner.hpp: the copies).
constexpr BenchCase kCases[] = {
    {"prefill-t512-h32x8-d64-f32", "GQA 4 at head_dim 64, prompt of 512 tokens", CaseKind::kPrefill, 512, 512, 32, 8,
     64, DType::kF32, true},
    {"prefill-t512-h32x8-d64-f16", "GQA 4 at head_dim 64, prompt of 512 tokens", CaseKind::kPrefill, 512, 512, 32, 8,
     64, DType::kF16, true},
    {"prefill-t512-h32x8-d128-f32", "Llama-3-8B-like layer (GQA 4), prompt of 512 tokens", CaseKind::kPrefill, 512, 512,
     32, 8, 128, DType::kF32, true},
    {"prefill-t512-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4), prompt of 512 tokens", CaseKind::kPrefill, 512, 512,
     32, 8, 128, DType::kF16, true},
    {"prefill-t2048-h32x8-d64-f32", "GQA 4 at head_dim 64, prompt of 2048 tokens", CaseKind::kPrefill, 2048, 2048, 32,
     8, 64, DType::kF32, true},
    {"prefill-t2048-h32x8-d64-f16", "GQA 4 at head_dim 64, prompt of 2048 tokens", CaseKind::kPrefill, 2048, 2048, 32,
     8, 64, DType::kF16, true},
    {"prefill-t2048-h32x8-d128-f32", "Llama-3-8B-like layer (GQA 4), prompt of 2048 tokens", CaseKind::kPrefill, 2048,
     2048, 32, 8, 128, DType::kF32, true},
    {"prefill-t2048-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4), prompt of 2048 tokens", CaseKind::kPrefill, 2048,
     2048, 32, 8, 128, DType::kF16, true},
    {"decode-t512-h32x32-d64-f16", "MHA at head_dim 64, one token against 512 cached", CaseKind::kDecode, 1, 512, 32,
     32, 64, DType::kF16, true},
    {"decode-t512-h32x32-d128-f16", "Llama-2-7B-like layer (MHA), one token against 512 cached", CaseKind::kDecode, 1,
     512, 32, 32, 128, DType::kF16, true},
    {"decode-t512-h32x8-d64-f16", "GQA 4 at head_dim 64, one token against 512 cached", CaseKind::kDecode, 1, 512, 32,
     8, 64, DType::kF16, true},
    {"decode-t512-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4), one token against 512 cached", CaseKind::kDecode, 1,
     512, 32, 8, 128, DType::kF16, true},
    {"decode-t2048-h32x32-d64-f16", "MHA at head_dim 64, one token against 2048 cached", CaseKind::kDecode, 1, 2048, 32,
     32, 64, DType::kF16, true},
    {"decode-t2048-h32x32-d128-f16", "Llama-2-7B-like layer (MHA), one token against 2048 cached", CaseKind::kDecode, 1,
     2048, 32, 32, 128, DType::kF16, true},
    {"decode-t2048-h32x8-d64-f16", "GQA 4 at head_dim 64, one token against 2048 cached", CaseKind::kDecode, 1, 2048,
     32, 8, 64, DType::kF16, true},
    {"decode-t2048-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4), one token against 2048 cached", CaseKind::kDecode,
     1, 2048, 32, 8, 128, DType::kF16, true},
    {"decode-t8192-h32x32-d64-f16", "MHA at head_dim 64, one token against 8192 cached", CaseKind::kDecode, 1, 8192, 32,
     32, 64, DType::kF16, true},
    {"decode-t8192-h32x32-d128-f16", "Llama-2-7B-like layer (MHA), one token against 8192 cached", CaseKind::kDecode, 1,
     8192, 32, 32, 128, DType::kF16, true},
    {"decode-t8192-h32x8-d64-f16", "GQA 4 at head_dim 64, one token against 8192 cached", CaseKind::kDecode, 1, 8192,
     32, 8, 64, DType::kF16, true},
    {"decode-t8192-h32x8-d128-f16", "Llama-3-8B-like layer (GQA 4), one token against 8192 cached", CaseKind::kDecode,
     1, 8192, 32, 8, 128, DType::kF16, true},
    {"smollm2-135m-prefill-t2048-h9x3-d64-f16", "SmolLM2-135M layer (9 query, 3 kv heads), prompt of 2048 tokens",
     CaseKind::kPrefill, 2048, 2048, 9, 3, 64, DType::kF16, true},
    {"smollm2-135m-decode-t2048-h9x3-d64-f16",
     "SmolLM2-135M layer (9 query, 3 kv heads), one token against 2048 cached", CaseKind::kDecode, 1, 2048, 9, 3, 64,
     DType::kF16, true},
    {"prefill-t2048-h32x8-d80-f16", "generic head_dim path: 80 (Phi-2's head size), GQA 4", CaseKind::kPrefill, 2048,
     2048, 32, 8, 80, DType::kF16, true},
    {"prefill-t2048-h32x8-d256-f16", "generic head_dim path: 256 (Gemma's head size), GQA 4", CaseKind::kPrefill, 2048,
     2048, 32, 8, 256, DType::kF16, true},
    {"decode-t2048-h32x32-d64-q8_0", "MHA at head_dim 64, one token against 2048 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 32, 64, DType::kQ8_0, true},
    {"decode-t2048-h32x32-d128-q8_0", "MHA at head_dim 128, one token against 2048 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 32, 128, DType::kQ8_0, true},
    {"decode-t2048-h32x8-d64-q8_0", "GQA 4 at head_dim 64, one token against 2048 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 8, 64, DType::kQ8_0, true},
    {"decode-t2048-h32x8-d128-q8_0", "GQA 4 at head_dim 128, one token against 2048 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 8, 128, DType::kQ8_0, true},
    {"decode-t8192-h32x32-d64-q8_0", "MHA at head_dim 64, one token against 8192 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 32, 64, DType::kQ8_0, true},
    {"decode-t8192-h32x32-d128-q8_0", "MHA at head_dim 128, one token against 8192 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 32, 128, DType::kQ8_0, true},
    {"decode-t8192-h32x8-d64-q8_0", "GQA 4 at head_dim 64, one token against 8192 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 8, 64, DType::kQ8_0, true},
    {"decode-t8192-h32x8-d128-q8_0", "GQA 4 at head_dim 128, one token against 8192 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 8, 128, DType::kQ8_0, true},
    {"prefill-t2048-h32x8-d64-q8_0", "GQA 4 at head_dim 64, prompt of 2048 tokens, K/V in q8_0 blocks",
     CaseKind::kPrefill, 2048, 2048, 32, 8, 64, DType::kQ8_0, true},
    {"prefill-t2048-h32x8-d128-q8_0", "GQA 4 at head_dim 128, prompt of 2048 tokens, K/V in q8_0 blocks",
     CaseKind::kPrefill, 2048, 2048, 32, 8, 128, DType::kQ8_0, true},
    {"smollm2-135m-decode-t2048-h9x3-d64-q8_0", "SmolLM2-135M layer, one token against 2048 cached in q8_0 blocks",
     CaseKind::kDecode, 1, 2048, 9, 3, 64, DType::kQ8_0, true},
    {"decode-t2048-h32x32-d64-q4_0", "MHA at head_dim 64, one token against 2048 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 32, 64, DType::kQ4_0, true},
    {"decode-t2048-h32x32-d128-q4_0", "MHA at head_dim 128, one token against 2048 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 32, 128, DType::kQ4_0, true},
    {"decode-t2048-h32x8-d64-q4_0", "GQA 4 at head_dim 64, one token against 2048 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 8, 64, DType::kQ4_0, true},
    {"decode-t2048-h32x8-d128-q4_0", "GQA 4 at head_dim 128, one token against 2048 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 2048, 32, 8, 128, DType::kQ4_0, true},
    {"decode-t8192-h32x32-d64-q4_0", "MHA at head_dim 64, one token against 8192 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 32, 64, DType::kQ4_0, true},
    {"decode-t8192-h32x32-d128-q4_0", "MHA at head_dim 128, one token against 8192 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 32, 128, DType::kQ4_0, true},
    {"decode-t8192-h32x8-d64-q4_0", "GQA 4 at head_dim 64, one token against 8192 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 8, 64, DType::kQ4_0, true},
    {"decode-t8192-h32x8-d128-q4_0", "GQA 4 at head_dim 128, one token against 8192 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 8192, 32, 8, 128, DType::kQ4_0, true},
    {"prefill-t2048-h32x8-d64-q4_0", "GQA 4 at head_dim 64, prompt of 2048 tokens, K/V in q4_0 blocks",
     CaseKind::kPrefill, 2048, 2048, 32, 8, 64, DType::kQ4_0, true},
    {"prefill-t2048-h32x8-d128-q4_0", "GQA 4 at head_dim 128, prompt of 2048 tokens, K/V in q4_0 blocks",
     CaseKind::kPrefill, 2048, 2048, 32, 8, 128, DType::kQ4_0, true},
    {"smollm2-135m-decode-t2048-h9x3-d64-q4_0", "SmolLM2-135M layer, one token against 2048 cached in q4_0 blocks",
     CaseKind::kDecode, 1, 2048, 9, 3, 64, DType::kQ4_0, true},
    {"prefill-t2048-h32x32-d128-f16-alibi", "MPT-7B-like layer (MHA, ALiBi), prompt of 2048 tokens", CaseKind::kPrefill,
     2048, 2048, 32, 32, 128, DType::kF16, true, true},
    {"decode-t8192-h32x32-d128-f16-alibi", "MPT-7B-like layer (MHA, ALiBi), one token against 8192 cached",
     CaseKind::kDecode, 1, 8192, 32, 32, 128, DType::kF16, true, true},
    {"decode-t8192-h32x8-d128-f16-alibi", "GQA 4 with ALiBi, one token against 8192 cached", CaseKind::kDecode, 1, 8192,
     32, 8, 128, DType::kF16, true, true},
};

}  // namespace

const char* case_kind_name(CaseKind kind) { return kind == CaseKind::kDecode ? "decode" : "prefill"; }

std::span<const BenchCase> bench_cases() { return kCases; }

const BenchCase* find_bench_case(const char* name) {
  for (const BenchCase& c : kCases) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

double visible_pairs(const BenchCase& c) {
  if (!c.causal) return static_cast<double>(c.t_q) * c.t_kv;
  // Query i sees keys j <= i + (t_kv - t_q), at most t_kv of them.
  double pairs = 0;
  for (uint32_t i = 0; i < c.t_q; ++i) {
    const int64_t last = int64_t{i} + c.t_kv - c.t_q;
    const int64_t seen = last < 0 ? 0 : last + 1 > c.t_kv ? c.t_kv : last + 1;
    pairs += static_cast<double>(seen);
  }
  return pairs;
}

double case_flops(const BenchCase& c) { return 4.0 * c.head_dim * c.n_heads * visible_pairs(c); }

uint64_t case_kv_bytes(const BenchCase& c) {
  return 2ull * c.t_kv * c.n_kv_heads * dtype_row_bytes(c.kv_dtype, c.head_dim);
}

}  // namespace headway::bench
