// The named benchmark cases of `headway bench`: attention shapes of the models headway targets,
// each a prefill (causal, t_q = t_kv), a decode step (t_q = 1 against a filled cache) or an
// encoder's batch of sentences (bidirectional, packed back to back or padded to the longest).
// Names read as what they are: <kind>-t<t_kv>-h<n_heads>x<n_kv_heads>-d<head_dim>-<kv dtype>
// (f32, f16, or ggml's q8_0 / q4_0 blocks),
// with a model prefix where the shape is one model's (smollm2-135m-decode-t2048-h9x3-d64-f16)
// and an -alibi suffix where the logits carry ALiBi's biases (the standard slopes). An encoder
// case's kind says how its sentences are stored and how many there are (packed32, padded32), and
// t<t_kv> counts the rows stored: minilm-packed32-t2533-h12x12-d32-f32.
//
// Beside them, a table of Gated DeltaNet cases (DeltaCase): Qwen3.5's linear-attention layers,
// which carry a state per value head instead of a K/V cache, so none of the attention fields fit.
// Names: <model>-gdn-<prefill-t<t>|decode>-h<value_heads>x<key_heads>-d<dk> (dk = dv):
// qwen3.5-0.8b-gdn-prefill-t512-h16x16-d128.
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
  kEncoder,      // a batch of sentences (Batch), each attending only within itself, in one call
};
const char* case_kind_name(CaseKind kind);  // "prefill", "decode", "encoder"

// How an encoder case stores its sentences (encoder_lengths(), in order) in Q, K, V and O.
enum class Batch : uint8_t {
  kNone = 0,  // one sequence: prefill and decode
  // Back to back, no padding: one attend() over cu_seqlens_q (FlashAttention's varlen layout).
  kPacked,
  // Each padded to the longest: one attend() over equal sequences whose bool mask hides the pad
  // keys, what a padded PyTorch batch computes (the pad rows' queries included).
  kPadded,
};

struct BenchCase {
  const char* name;
  const char* about;  // what the shape stands for
  CaseKind kind;
  uint32_t t_q, t_kv, n_heads, n_kv_heads, head_dim;
  DType kv_dtype;
  bool causal;
  bool alibi = false;
  Batch batch = Batch::kNone;  // kEncoder: t_q = t_kv = the rows stored, padding included
};

std::span<const BenchCase> bench_cases();
const BenchCase* find_bench_case(const char* name);  // nullptr when there is none of that name

// The real lengths of the sentences of every encoder case, in order (bench/cases.cc).
std::span<const uint32_t> encoder_lengths();
// The first row of sentence b of an encoder case (0 <= b <= its count: the last is t_q): the
// lengths before it, packed, or b · the longest, padded. cu_seqlens_q is these rows.
uint32_t encoder_row(const BenchCase& c, uint32_t b);

// Query-key pairs the mask lets through (bottom-right aligned causal mask): the work done. An
// encoder batch counts its sentences' real tokens only, padded or not: the useful work.
double visible_pairs(const BenchCase& c);
// 4 · head_dim · n_heads · visible pairs: Q·Kᵀ and P·V, a multiply and an add each.
double case_flops(const BenchCase& c);
// Unique bytes of K and V as stored: 2 · t_kv · n_kv_heads · head_dim · sizeof(kv_dtype) (a padded
// batch's pad rows included).
uint64_t case_kv_bytes(const BenchCase& c);

// One Gated DeltaNet layer's delta rule over all its value heads (simd/gated_delta/gated_delta.h), each head's
// state [dk, dv] f32; value head h reads key head h / (value_heads / key_heads). kPrefill: one
// gated_delta_chunked call per head over t tokens; kDecode: one gated_delta_recurrent step, t = 1.
struct DeltaCase {
  const char* name;
  const char* about;
  CaseKind kind;  // kPrefill or kDecode
  uint32_t t, value_heads, key_heads, dk, dv;
};

std::span<const DeltaCase> delta_cases();
const DeltaCase* find_delta_case(const char* name);  // nullptr when there is none of that name
const char* delta_kind_name(const DeltaCase& c);     // "gdn-prefill", "gdn-decode"

// The work of the recurrent rule, whichever form runs: 7 · dk · dv per token and value head, 2
// each for Sᵀk, Sᵀq and the rank-1 update k·δᵀ added to S, 1 for the decay exp(g)·S (the
// chunked form's extra products are not useful work; the O(dk + dv) vector work per token is
// left out, as attention's count leaves out the softmax).
double delta_case_flops(const DeltaCase& c);
// The state read once: value_heads · dk · dv · 4 bytes, what a decode step must read (its one
// token's rows are a few percent of it), set against the read roof. The step writes as many back,
// which are not counted: the read roof measures a read stream alone, and dirty lines leave the
// core's caches later, by another path, so with them a step can pass that roof. A prefill's
// token rows are not counted either: at hundreds of FLOP per state byte the FMA roof binds it.
uint64_t delta_state_bytes(const DeltaCase& c);

}  // namespace headway::bench
