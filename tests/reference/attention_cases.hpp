// The attention cases every backend is held against the double-precision reference on: the
// kernel suite (every Highway target), the API suite (attend(), every KV dtype), the GPU suite
// (the Vulkan backend) and the Cortex-M harness (tests/baremetal/). One constexpr table, no heap,
// so the bare-metal harness sizes its static buffers from it; what a backend leaves out is
// decided by the filters below (runs_on_baremetal, runs_on_gpu), in this file and nowhere else.
//
// Inputs come from generate_inputs(): integer arithmetic only, so every platform (and the host
// program that computes the Cortex-M goldens) sees bit for bit the same Q, K and V (Rng::normal()
// goes through libm, whose last bits differ between glibc and newlib).
//
// Query row i sits at position i + t_kv − t_q (tests/reference/reference_attention.hpp): t_q < t_kv is a
// chunk after earlier tokens, t_q > t_kv gives early rows that see no key.
#pragma once

#include <cstdint>
#include <limits>

#include "headway/config.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {

// Learned sink logits (gpt-oss) of a case, per query head h (case_sink below): none; mixed values
// in [-2, 3], about the size of the logits; large positive (12, 28, 44: the sink outweighs the keys,
// then all of them); large negative (-40, -48, -56: no visible effect).
enum class CaseSinks : uint8_t { kNone, kMixed, kLargePositive, kLargeNegative };

// A general mask [t_q, t_kv] of a case (case_mask_entry below): none, bool (PyTorch's True =
// visible), or additive f32.
enum class CaseMask : uint8_t { kNone, kBool, kAdditive };

struct AttentionCase {
  const char* name;
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
  bool causal;
  uint32_t window;  // 0 = none
  float softcap;    // 0 = off
  float scale;      // 0 = 1/sqrt(head_dim), as AttentionParams
  DType kv;         // the K/V storage the kernel, GPU and bare-metal runs use (the API suite runs every one)
  uint64_t seed;
  CaseSinks sinks = CaseSinks::kNone;
  uint32_t sink_tokens = 0;         // StreamingLLM sink tokens (with a window); 0 = none
  bool alibi = false;               // ALiBi with case_alibi_slope's slopes
  uint32_t prefix = 0;              // prefix-LM: with causal, keys j < prefix seen by every row; 0 = none
  bool window_symmetric = false;    // without causal: |p − j| < window (ModernBERT's local layers)
  CaseMask mask = CaseMask::kNone;  // a general mask, entries from case_mask_entry
};

// Named by what each one is there for: head_dim 64 and 128 (specialized) and generic sizes up to
// 512; MHA, GQA groups 2, 3, 4, 7, 8 and MQA; lengths 1 and just off the vector widths; causal,
// window (beyond t_kv, far from key 0, without causal, 1), softcap, scale; rows that see no key;
// prefill chunks after earlier tokens; decodes long enough for split-KV, up to 4096 keys; sink
// logits (MHA and GQA, d64, d128 and generic, window, softcap, rows that see no key, split-KV with
// chunk 0 masked, large positive and negative sinks); sink tokens (prefill past the window, decode,
// split-KV with the sink keys in chunk 0 and the window in the last, bidirectional, generic sizes);
// ALiBi (causal and bidirectional, decode, split-KV, with a window, sink tokens and sink logits);
// K/V in ggml's q8_0 and q4_0 blocks (prefill, decode, split-KV, head_dim 80 and 50 with a short
// last block, head_dim 1, with the other features); prefix-LM (prefill, a chunk past the prefix,
// decode, split-KV with the prefix across chunks, with a window, sink tokens, ALiBi and q4_0);
// symmetric windows (prefill, a chunk, decode rows, split-KV, sink tokens, ALiBi, q8_0).
// General masks, bool and additive (MHA and GQA, d64, d128 and generic, prefill, decode, split-KV,
// causal, window, prefix, softcap, ALiBi, sink logits and tokens, q8_0; rows and tiles the mask
// hides entirely). Tails: lengths 1, 15, 16, 17, 63, 64 and 65 and head_dim 1, 8, 50 and 80 across
// the K/V dtypes, for the targets whose vectors they leave partial (Helium's 4 lanes included).
//   {name, t_q, t_kv, n_heads, n_kv_heads, head_dim, causal, window, softcap, scale, kv, seed(, sinks, sink_tokens,
//    alibi, prefix, window_symmetric, mask)}
inline constexpr AttentionCase kAttentionCases[] = {
    {"prefill d64 MHA causal", 40, 40, 2, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 1},
    {"prefill d128 GQA4 causal", 24, 24, 4, 1, 128, true, 0, 0.0f, 0.0f, DType::kF16, 2},
    {"decode d128 GQA2", 1, 70, 4, 2, 128, true, 0, 0.0f, 0.0f, DType::kF16, 3},
    {"decode d64 GQA4 window 16", 2, 100, 8, 2, 64, true, 16, 0.0f, 0.0f, DType::kBF16, 4},
    {"generic d80 MQA group 3 causal window 9", 5, 33, 3, 1, 80, true, 9, 0.0f, 0.0f, DType::kBF16, 5},
    {"generic d50 bidirectional softcap 5", 17, 17, 2, 2, 50, false, 0, 5.0f, 0.0f, DType::kF32, 6},
    {"fully masked rows d64 (t_q > t_kv, causal)", 6, 3, 2, 1, 64, true, 0, 0.0f, 0.0f, DType::kF32, 7},
    {"length 1 d128", 1, 1, 2, 2, 128, true, 0, 0.0f, 0.0f, DType::kF16, 8},
    {"split-KV decode d64 t_kv 1100", 1, 1100, 2, 1, 64, true, 0, 0.0f, 0.0f, DType::kF16, 9},
    {"length 1 head_dim 1", 1, 1, 1, 1, 1, false, 0, 0.0f, 0.0f, DType::kF32, 43},
    {"d64 GQA2 bidirectional, tiles that do not divide t_q", 7, 13, 4, 2, 64, false, 0, 0.0f, 0.0f, DType::kF32, 55},
    {"d64 GQA2 causal, tiles that do not divide t_q", 7, 13, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kF16, 55},
    {"d128 MHA causal window 5", 33, 40, 8, 8, 128, true, 5, 0.0f, 0.0f, DType::kBF16, 82},
    {"generic d80 GQA2 scale 0.3", 17, 17, 6, 3, 80, true, 0, 0.0f, 0.3f, DType::kF32, 59},
    {"generic d96 group 3 bidirectional softcap 2", 5, 70, 12, 4, 96, false, 0, 2.0f, 0.0f, DType::kF16, 112},
    {"generic d50 MQA, early rows see no key", 9, 4, 2, 1, 50, true, 0, 0.0f, 0.0f, DType::kBF16, 46},
    {"d256 window beyond t_kv (no effect)", 3, 3, 2, 2, 256, false, 100, 0.0f, 0.0f, DType::kF32, 45},
    {"generic d32 MQA causal window 16 softcap 30", 64, 64, 4, 1, 32, true, 16, 30.0f, 0.0f, DType::kF16, 106},
    {"d64 window 40 far from key 0 (most tiles masked)", 9, 300, 8, 2, 64, true, 40, 0.0f, 0.0f, DType::kBF16, 342},
    {"d64 window 80 without causal, scale 0.2 softcap 5", 9, 300, 8, 8, 64, false, 80, 5.0f, 0.2f, DType::kF32, 342},
    {"split-KV decode d64 GQA4 t_kv 2500", 1, 2500, 8, 2, 64, false, 0, 0.0f, 0.0f, DType::kF16, 2542},
    {"split-KV d128 MQA window 700 (whole chunks masked)", 2, 3000, 4, 1, 128, true, 700, 0.0f, 0.0f, DType::kBF16,
     3042},
    {"split-KV generic d100 GQA2 softcap 50", 1, 1100, 6, 3, 100, true, 0, 50.0f, 0.0f, DType::kF32, 1142},
    {"decode d64 GQA7", 1, 65, 7, 1, 64, true, 0, 0.0f, 0.0f, DType::kF16, 10},
    {"prefill d128 GQA8", 3, 40, 16, 2, 128, true, 0, 0.0f, 0.0f, DType::kBF16, 11},
    {"lengths off the vector width: t_q 15 t_kv 17 d 17", 15, 17, 2, 1, 17, true, 0, 0.0f, 0.0f, DType::kF32, 12},
    {"decode t_kv 63 d64", 1, 63, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 13},
    {"t_q 16 t_kv 65 d 65 window 8", 16, 65, 2, 2, 65, true, 8, 0.0f, 0.0f, DType::kBF16, 14},
    {"decode past the window: t_kv 300 window 16", 1, 300, 4, 2, 64, true, 16, 0.0f, 0.0f, DType::kF16, 15},
    {"generic d96 window 1 (each row sees itself)", 20, 20, 2, 1, 96, true, 1, 0.0f, 0.0f, DType::kF32, 16},
    {"d512 (the largest head_dim) bidirectional", 2, 20, 2, 1, 512, false, 0, 0.0f, 0.0f, DType::kF32, 17},
    {"softcap 5 at scale 1 (the cap bites)", 20, 70, 4, 1, 64, true, 0, 5.0f, 1.0f, DType::kF16, 18},
    {"prefill chunk at position 504 d64 GQA2", 16, 520, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kBF16, 19},
    {"longest context: decode t_kv 4096 d128 GQA4", 1, 4096, 4, 1, 128, true, 0, 0.0f, 0.0f, DType::kF16, 20},
    {"sinks d64 MHA causal", 40, 40, 2, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 21, CaseSinks::kMixed},
    {"sinks d128 GQA4 causal window 8, rows past the window", 24, 40, 8, 2, 128, true, 8, 0.0f, 0.0f, DType::kF16, 22,
     CaseSinks::kMixed},
    {"sinks generic d80 GQA2 bidirectional softcap 5", 9, 17, 4, 2, 80, false, 0, 5.0f, 0.0f, DType::kBF16, 23,
     CaseSinks::kMixed},
    {"sinks d64 GQA2 fully masked rows (t_q > t_kv, causal)", 6, 3, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 24,
     CaseSinks::kMixed},
    {"sinks split-KV decode d64 GQA4 t_kv 1100", 1, 1100, 4, 1, 64, true, 0, 0.0f, 0.0f, DType::kF16, 25,
     CaseSinks::kMixed},
    {"sinks split-KV d128 MQA window 700 (chunk 0 masked)", 2, 3000, 4, 1, 128, true, 700, 0.0f, 0.0f, DType::kBF16, 26,
     CaseSinks::kMixed},
    {"sinks large positive decode d64 GQA2", 1, 70, 6, 3, 64, true, 0, 0.0f, 0.0f, DType::kF32, 27,
     CaseSinks::kLargePositive},
    {"sinks large negative generic d96 GQA3 window 5", 12, 20, 6, 2, 96, true, 5, 0.0f, 0.0f, DType::kF16, 28,
     CaseSinks::kLargeNegative},
    {"sink tokens 4 d64 GQA2 window 16, prefill past the window", 40, 40, 4, 2, 64, true, 16, 0.0f, 0.0f, DType::kF16,
     29, CaseSinks::kNone, 4},
    {"sink tokens 4 decode d128 MQA window 32 t_kv 300", 1, 300, 4, 1, 128, true, 32, 0.0f, 0.0f, DType::kBF16, 30,
     CaseSinks::kNone, 4},
    {"sink tokens 5 split-KV decode d64 window 200 t_kv 1500", 1, 1500, 2, 1, 64, true, 200, 0.0f, 0.0f, DType::kF16,
     31, CaseSinks::kNone, 5},
    {"sink tokens 3 generic d80 bidirectional window 9", 17, 40, 3, 1, 80, false, 9, 0.0f, 0.0f, DType::kF32, 32,
     CaseSinks::kNone, 3},
    {"sink tokens 1 generic d50 window 2 softcap 5, chunk after 70 tokens", 9, 79, 2, 2, 50, true, 2, 5.0f, 0.0f,
     DType::kBF16, 33, CaseSinks::kNone, 1},
    {"sink tokens 7 and sink logits d64 GQA4 window 12", 20, 90, 8, 2, 64, true, 12, 0.0f, 0.0f, DType::kF32, 34,
     CaseSinks::kMixed, 7},
    {"alibi d64 MHA causal", 40, 40, 8, 8, 64, true, 0, 0.0f, 0.0f, DType::kF32, 35, CaseSinks::kNone, 0, true},
    {"alibi decode d128 GQA4 t_kv 300", 1, 300, 8, 2, 128, true, 0, 0.0f, 0.0f, DType::kF16, 36, CaseSinks::kNone, 0,
     true},
    {"alibi generic d96 GQA3 bidirectional", 12, 30, 6, 2, 96, false, 0, 0.0f, 0.0f, DType::kBF16, 37, CaseSinks::kNone,
     0, true},
    {"alibi split-KV decode d64 t_kv 1100 window 700, sink tokens 4, sink logits", 1, 1100, 4, 1, 64, true, 700, 0.0f,
     0.0f, DType::kF16, 38, CaseSinks::kMixed, 4, true},
    {"alibi generic d33 GQA2 window 16 sink tokens 2 softcap 5, prefill chunk", 20, 70, 4, 2, 33, true, 16, 5.0f, 0.0f,
     DType::kF32, 39, CaseSinks::kNone, 2, true},
    {"q8_0 prefill d64 GQA2 causal", 40, 40, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kQ8_0, 40},
    {"q4_0 prefill d128 MQA window 16", 33, 40, 4, 1, 128, true, 16, 0.0f, 0.0f, DType::kQ4_0, 41},
    {"q8_0 decode d128 GQA4 t_kv 300", 1, 300, 8, 2, 128, true, 0, 0.0f, 0.0f, DType::kQ8_0, 42},
    {"q4_0 decode d64 MHA t_kv 70", 1, 70, 4, 4, 64, true, 0, 0.0f, 0.0f, DType::kQ4_0, 44},
    {"q8_0 generic d80 (a short last block) softcap 5", 9, 17, 4, 2, 80, true, 0, 5.0f, 0.0f, DType::kQ8_0, 47},
    {"q4_0 generic d50 bidirectional", 5, 33, 2, 1, 50, false, 0, 0.0f, 0.0f, DType::kQ4_0, 48},
    {"q8_0 split-KV decode d64 GQA4 t_kv 1100", 1, 1100, 4, 1, 64, true, 0, 0.0f, 0.0f, DType::kQ8_0, 49},
    {"q4_0 split-KV d128 MQA window 700, sink tokens 4, ALiBi", 2, 3000, 4, 1, 128, true, 700, 0.0f, 0.0f, DType::kQ4_0,
     50, CaseSinks::kNone, 4, true},
    {"q4_0 length 1 head_dim 1", 1, 1, 1, 1, 1, false, 0, 0.0f, 0.0f, DType::kQ4_0, 51},
    {"q8_0 d33 GQA2 sink logits, rows that see no key", 9, 4, 4, 2, 33, true, 0, 0.0f, 0.0f, DType::kQ8_0, 52,
     CaseSinks::kMixed},
    {"prefix 10 d64 MHA prefill", 40, 40, 2, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 53, CaseSinks::kNone, 0, false,
     10},
    {"prefix 33 d128 GQA4 (past a 32-row tile)", 40, 40, 8, 2, 128, true, 0, 0.0f, 0.0f, DType::kF16, 54,
     CaseSinks::kNone, 0, false, 33},
    {"prefix 30 generic d80 GQA2 window 8, chunk at 20", 20, 40, 4, 2, 80, true, 8, 0.0f, 0.0f, DType::kBF16, 56,
     CaseSinks::kNone, 0, false, 30},
    {"prefix 70 decode d64 GQA2 t_kv 100", 1, 100, 4, 2, 64, true, 0, 0.0f, 0.0f, DType::kF32, 57, CaseSinks::kNone, 0,
     false, 70},
    {"prefix 800 split-KV d64 t_kv 1100, sink logits", 2, 1100, 4, 1, 64, true, 0, 0.0f, 0.0f, DType::kF16, 58,
     CaseSinks::kMixed, 0, false, 800},
    {"prefix 16 d64 window 6 sink tokens 2 ALiBi", 24, 24, 4, 2, 64, true, 6, 0.0f, 0.0f, DType::kF32, 60,
     CaseSinks::kNone, 2, true, 16},
    {"q4_0 prefix 12 d128 GQA2", 20, 20, 4, 2, 128, true, 0, 0.0f, 0.0f, DType::kQ4_0, 61, CaseSinks::kNone, 0, false,
     12},
    {"symmetric window 9 generic d32 MHA (ModernBERT local)", 40, 40, 4, 4, 32, false, 9, 0.0f, 0.0f, DType::kF32, 62,
     CaseSinks::kNone, 0, false, 0, true},
    {"symmetric window 65 d64 GQA2, 200 tokens", 200, 200, 4, 2, 64, false, 65, 0.0f, 0.0f, DType::kF16, 63,
     CaseSinks::kNone, 0, false, 0, true},
    {"symmetric window 5 d128 chunk of 9 at 31", 9, 40, 4, 1, 128, false, 5, 0.0f, 0.0f, DType::kBF16, 64,
     CaseSinks::kNone, 0, false, 0, true},
    {"symmetric window 300 split-KV, 2 rows at 1098", 2, 1100, 4, 1, 64, false, 300, 0.0f, 0.0f, DType::kF16, 65,
     CaseSinks::kMixed, 0, false, 0, true},
    {"symmetric window 6 sink tokens 2 ALiBi generic d80", 24, 24, 4, 2, 80, false, 6, 0.0f, 0.0f, DType::kF32, 66,
     CaseSinks::kNone, 2, true, 0, true},
    {"q8_0 symmetric window 17 d64", 50, 50, 4, 2, 64, false, 17, 0.0f, 0.0f, DType::kQ8_0, 67, CaseSinks::kNone, 0,
     false, 0, true},
    {"bool mask d64 MHA bidirectional", 40, 40, 2, 2, 64, false, 0, 0.0f, 0.0f, DType::kF32, 68, CaseSinks::kNone, 0,
     false, 0, false, CaseMask::kBool},
    {"additive mask d128 GQA4 causal", 24, 24, 4, 1, 128, true, 0, 0.0f, 0.0f, DType::kF16, 69, CaseSinks::kNone, 0,
     false, 0, false, CaseMask::kAdditive},
    {"bool mask generic d32 12 heads (MiniLM), 32 tokens", 32, 32, 12, 12, 32, false, 0, 0.0f, 0.0f, DType::kF32, 70,
     CaseSinks::kNone, 0, false, 0, false, CaseMask::kBool},
    {"additive mask decode d64 GQA2 t_kv 100 softcap", 1, 100, 4, 2, 64, true, 0, 30.0f, 0.0f, DType::kBF16, 71,
     CaseSinks::kNone, 0, false, 0, false, CaseMask::kAdditive},
    {"bool mask split-KV d64 t_kv 1100, sink logits", 2, 1100, 4, 1, 64, true, 0, 0.0f, 0.0f, DType::kF16, 72,
     CaseSinks::kMixed, 0, false, 0, false, CaseMask::kBool},
    {"additive mask generic d80 chunk of 20 at 20, window 8 ALiBi", 20, 40, 4, 2, 80, true, 8, 0.0f, 0.0f, DType::kF32,
     73, CaseSinks::kNone, 0, true, 0, false, CaseMask::kAdditive},
    {"bool mask d64 GQA2 prefix 10 sink tokens 2 window 12", 30, 30, 4, 2, 64, true, 12, 0.0f, 0.0f, DType::kF32, 74,
     CaseSinks::kNone, 2, false, 10, false, CaseMask::kBool},
    {"q8_0 additive mask decode d128 4 rows t_kv 300", 4, 300, 8, 2, 128, true, 0, 0.0f, 0.0f, DType::kQ8_0, 75,
     CaseSinks::kNone, 0, false, 0, false, CaseMask::kAdditive},
    {"tails: t_q 16 t_kv 63 head_dim 1 causal", 16, 63, 2, 1, 1, true, 0, 0.0f, 0.0f, DType::kF32, 76},
    {"tails: t_q 17 t_kv 64 head_dim 8 GQA2 causal", 17, 64, 4, 2, 8, true, 0, 0.0f, 0.0f, DType::kF16, 77},
    {"tails: decode t_kv 65 head_dim 50", 1, 65, 4, 2, 50, true, 0, 0.0f, 0.0f, DType::kQ8_0, 78},
    {"tails: t_q 63 t_kv 65 head_dim 50 GQA2 causal", 63, 65, 2, 1, 50, true, 0, 0.0f, 0.0f, DType::kBF16, 79},
    {"tails: t_q 65 t_kv 15 head_dim 50 causal (rows that see no key)", 65, 15, 2, 2, 50, true, 0, 0.0f, 0.0f,
     DType::kQ4_0, 80},
    {"tails: t_q 64 t_kv 64 head_dim 1 bidirectional", 64, 64, 2, 2, 1, false, 0, 0.0f, 0.0f, DType::kF16, 81},
    {"tails: t_q 15 t_kv 16 head_dim 80 GQA2 window 5", 15, 16, 4, 2, 80, true, 5, 0.0f, 0.0f, DType::kF32, 82},
    {"tails: decode t_kv 17 head_dim 8", 1, 17, 2, 1, 8, true, 0, 0.0f, 0.0f, DType::kF16, 83},
};
inline constexpr uint32_t kAttentionCaseCount = sizeof(kAttentionCases) / sizeof(kAttentionCases[0]);

constexpr uint64_t case_q_elems(const AttentionCase& c) { return uint64_t{c.t_q} * c.n_heads * c.head_dim; }
constexpr uint64_t case_kv_elems(const AttentionCase& c) { return uint64_t{c.t_kv} * c.n_kv_heads * c.head_dim; }
constexpr uint64_t case_work(const AttentionCase& c) { return case_q_elems(c) * c.t_kv; }  // multiply-adds of QKᵀ

// Sink logit of query head h (CaseSinks); exact in f32.
constexpr float case_sink(const AttentionCase& c, uint32_t h) {
  switch (c.sinks) {
    case CaseSinks::kMixed: return -2.0f + 0.625f * static_cast<float>((h * 5 + 2) % 9);
    case CaseSinks::kLargePositive: return 12.0f + 16.0f * static_cast<float>(h % 3);
    case CaseSinks::kLargeNegative: return -40.0f - 8.0f * static_cast<float>(h % 3);
    default: return 0.0f;
  }
}
constexpr bool case_has_sinks(const AttentionCase& c) { return c.sinks != CaseSinks::kNone; }

// ALiBi slope of query head h: 1/16 to 1/2 in steps of 1/16, exact in f32 (the kernels take any
// finite slopes; the standard rule is checked on its own).
constexpr float case_alibi_slope(const AttentionCase&, uint32_t h) {
  return 0.0625f * static_cast<float>(1 + (h * 3 + 1) % 8);
}

// Entry [i][j] of a case's general mask, as an additive value (a bool mask's entries are 0 or
// −inf: visible or not). Hidden: every key of each row i with i % 13 == 7 (a row the mask hides
// entirely), keys in every third block of 64 for even rows (whole tiles hidden), and about one
// entry in five; an additive mask's other entries are in [−2, 1.875] in steps of 1/8 (exact in f32).
constexpr float case_mask_entry(const AttentionCase& c, uint32_t i, uint32_t j) {
  uint64_t x = c.seed * 0x9E3779B97F4A7C15ull ^ (uint64_t{i} << 32 | j);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  const bool hidden = i % 13 == 7 || (i % 2 == 0 && j / 64 % 3 == 1) || x % 5 == 0;
  if (hidden) return -std::numeric_limits<float>::infinity();
  if (c.mask == CaseMask::kBool) return 0.0f;
  return static_cast<float>(static_cast<int32_t>(x >> 8 & 31) - 16) * 0.125f;
}
constexpr bool case_has_mask(const AttentionCase& c) { return c.mask != CaseMask::kNone; }

// ---- Which backend runs which case ---------------------------------------------------------
// The kernel and API suites run every case; the GPU suite those runs_on_gpu keeps. The Cortex-M harness keeps its
// static buffers (Q, K, V, O, split-KV partials) and its goldens (in flash) within the boards' memory (mps3-an547: 2
// MiB SRAM) and each case within seconds under qemu-system-arm: K/V up to 1100 keys of one d64 head, Q up to 24 tokens
// of 4 d128 heads, QKᵀ up to 400 Ki multiply-adds; head_dim up to 256, whose scratch fits the harness's 256 KiB
// workspace (d512's does not).
inline constexpr uint32_t kBareMetalMaxHeadDim = 256;
inline constexpr uint64_t kBareMetalMaxKvElems = 1100 * 64;
inline constexpr uint64_t kBareMetalMaxQElems = 24 * 4 * 128;
inline constexpr uint64_t kBareMetalMaxWork = 400 * 1024;

constexpr bool runs_on_baremetal(const AttentionCase& c) {
  return c.head_dim <= kBareMetalMaxHeadDim && case_kv_elems(c) <= kBareMetalMaxKvElems &&
         case_q_elems(c) <= kBareMetalMaxQElems && case_work(c) <= kBareMetalMaxWork;
}

// The Vulkan backend runs every case: sink logits, sink tokens, ALiBi, general masks and q8_0 and
// q4_0 K/V included.
constexpr bool runs_on_gpu(const AttentionCase&) { return true; }

// ---- Inputs ----------------------------------------------------------------------------------

// A value in [-2, 2] in steps of 1/1024: exact in f32 and f16 (bf16 rounds some).
inline float exact_input(Rng& rng) {
  const int32_t units = static_cast<int32_t>((rng.next() >> 40) % 4097) - 2048;
  return static_cast<float>(units) * (1.0f / 1024.0f);
}

// Q, K, V of a case in that order, from its own seed: sink(which, i, x) with which 0 = Q
// [t_q, n_heads, d], 1 = K and 2 = V [t_kv, n_kv_heads, d] (dense, row-major), all f32 before
// K/V are rounded to their storage type.
template <class Sink>
void generate_inputs(const AttentionCase& c, Sink&& sink) {
  Rng rng(c.seed);
  const uint64_t nq = case_q_elems(c);
  const uint64_t nkv = case_kv_elems(c);
  for (uint64_t i = 0; i < nq; ++i) sink(0, i, exact_input(rng));
  for (uint64_t i = 0; i < nkv; ++i) sink(1, i, exact_input(rng));
  for (uint64_t i = 0; i < nkv; ++i) sink(2, i, exact_input(rng));
}

// The general mask of a case that has one, dense [t_q, t_kv]: sink(i · t_kv + j, entry) with
// case_mask_entry's entry (a bool mask's visible entries are those equal to 0).
template <class Sink>
void generate_mask(const AttentionCase& c, Sink&& sink) {
  if (!case_has_mask(c)) return;
  for (uint32_t i = 0; i < c.t_q; ++i) {
    for (uint32_t j = 0; j < c.t_kv; ++j) sink(uint64_t{i} * c.t_kv + j, case_mask_entry(c, i, j));
  }
}

}  // namespace test
}  // namespace headway
