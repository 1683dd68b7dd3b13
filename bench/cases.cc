#include "bench/cases.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace headway::bench {
namespace {

// The encoder cases' batch: 32 sentences of 12..128 tokens, drawn once (Python:
// `r = random.Random(0); [r.randint(12, 128) for _ in range(32)]`) and written here, so that every
// run and machine times the same batch. The longest, 128, is the padded case's length.
constexpr uint32_t kEncoderLengths[] = {120, 61,  109, 125, 65, 17, 45, 77,  74, 63, 112, 118, 50,  73, 57,  86,
                                        126, 128, 39,  76,  29, 48, 29, 108, 24, 91, 114, 44,  128, 80, 102, 115};
constexpr uint32_t kEncoderSentences = std::size(kEncoderLengths);

constexpr uint32_t encoder_longest() {
  return *std::max_element(std::begin(kEncoderLengths), std::end(kEncoderLengths));
}
constexpr uint32_t encoder_tokens() {
  uint32_t n = 0;
  for (const uint32_t len : kEncoderLengths) n += len;
  return n;
}
constexpr uint32_t kPackedRows = encoder_tokens();
constexpr uint32_t kPaddedRows = kEncoderSentences * encoder_longest();
// The encoder cases' names say these.
static_assert(kEncoderSentences == 32 && kPackedRows == 2533 && kPaddedRows == 4096);

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
    // An encoder layer's attention over a batch of 32 sentences (kEncoderLengths), bidirectional,
    // f32 K/V as the projections leave them: packed, then padded to the longest as a PyTorch
    // batch is, then packed at head_dim 64 (the same width, 384) for the specialized kernel.
    {"minilm-packed32-t2533-h12x12-d32-f32",
     "all-MiniLM-L6-v2 layer (12 heads x 32), 32 sentences of 12..128 tokens packed back to back", CaseKind::kEncoder,
     kPackedRows, kPackedRows, 12, 12, 32, DType::kF32, false, false, Batch::kPacked},
    {"minilm-padded32-t4096-h12x12-d32-f32",
     "all-MiniLM-L6-v2 layer, the same 32 sentences each padded to 128, pad keys masked", CaseKind::kEncoder,
     kPaddedRows, kPaddedRows, 12, 12, 32, DType::kF32, false, false, Batch::kPadded},
    {"encoder-packed32-t2533-h6x6-d64-f32",
     "the same packed batch at width 384 as 6 heads x 64 (the specialized head_dim)", CaseKind::kEncoder, kPackedRows,
     kPackedRows, 6, 6, 64, DType::kF32, false, false, Batch::kPacked},
};

// Qwen3.5's linear-attention shapes (transformers' Qwen3_5TextConfig: dk = dv = 128, 16 key
// heads; 16 value heads in the 0.8B model, 32 in the config's defaults). Prefill: a prompt of 512
// tokens in one call (8 chunks of kGatedDeltaChunk); decode: one token.
constexpr DeltaCase kDeltaCases[] = {
    {"qwen3.5-0.8b-gdn-prefill-t512-h16x16-d128", "Qwen3.5-0.8B linear-attention layer, prompt of 512 tokens",
     CaseKind::kPrefill, 512, 16, 16, 128, 128},
    {"qwen3.5-0.8b-gdn-decode-h16x16-d128", "Qwen3.5-0.8B linear-attention layer, one token", CaseKind::kDecode, 1, 16,
     16, 128, 128},
    {"qwen3.5-gdn-prefill-t512-h32x16-d128",
     "Qwen3.5 config default (32 value heads over 16 key heads), prompt of 512 tokens", CaseKind::kPrefill, 512, 32, 16,
     128, 128},
    {"qwen3.5-gdn-decode-h32x16-d128", "Qwen3.5 config default (32 value heads over 16 key heads), one token",
     CaseKind::kDecode, 1, 32, 16, 128, 128},
};

// Query-key pairs of one sequence of t_q queries over t_kv keys: every one, or those a bottom-right
// aligned causal mask lets through (query i sees keys j <= i + (t_kv - t_q), at most t_kv).
double sequence_pairs(uint32_t t_q, uint32_t t_kv, bool causal) {
  if (!causal) return static_cast<double>(t_q) * t_kv;
  double pairs = 0;
  for (uint32_t i = 0; i < t_q; ++i) {
    const int64_t last = int64_t{i} + t_kv - t_q;
    const int64_t seen = last < 0 ? 0 : last + 1 > t_kv ? t_kv : last + 1;
    pairs += static_cast<double>(seen);
  }
  return pairs;
}

}  // namespace

const char* case_kind_name(CaseKind kind) {
  switch (kind) {
    case CaseKind::kDecode: return "decode";
    case CaseKind::kEncoder: return "encoder";
    default: return "prefill";
  }
}

std::span<const BenchCase> bench_cases() { return kCases; }

const BenchCase* find_bench_case(const char* name) {
  for (const BenchCase& c : kCases) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

std::span<const uint32_t> encoder_lengths() { return kEncoderLengths; }

uint32_t encoder_row(const BenchCase& c, uint32_t b) {
  if (c.batch == Batch::kPadded) return b * encoder_longest();
  uint32_t row = 0;
  for (uint32_t i = 0; i < b; ++i) row += kEncoderLengths[i];
  return row;
}

double visible_pairs(const BenchCase& c) {
  if (c.batch == Batch::kNone) return sequence_pairs(c.t_q, c.t_kv, c.causal);
  // The sentences' own tokens: a padded batch computes more, which is the waste it shows.
  double pairs = 0;
  for (const uint32_t len : kEncoderLengths) pairs += sequence_pairs(len, len, c.causal);
  return pairs;
}

double case_flops(const BenchCase& c) { return 4.0 * c.head_dim * c.n_heads * visible_pairs(c); }

uint64_t case_kv_bytes(const BenchCase& c) {
  return 2ull * c.t_kv * c.n_kv_heads * dtype_row_bytes(c.kv_dtype, c.head_dim);
}

std::span<const DeltaCase> delta_cases() { return kDeltaCases; }

const DeltaCase* find_delta_case(const char* name) {
  for (const DeltaCase& c : kDeltaCases) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

const char* delta_kind_name(const DeltaCase& c) { return c.kind == CaseKind::kDecode ? "gdn-decode" : "gdn-prefill"; }

double delta_case_flops(const DeltaCase& c) { return 7.0 * c.dk * c.dv * c.value_heads * c.t; }

uint64_t delta_state_bytes(const DeltaCase& c) { return uint64_t{c.value_heads} * c.dk * c.dv * sizeof(float); }

}  // namespace headway::bench
