// Rotary position embedding applied in place to rows of heads.
//   x: n_tokens rows, token t at x + t · token_stride floats, holding n_heads heads of head_dim.
//   Token t sits at position pos0 + t. Pairs (NeoX rotate-half): (i, i + rotary/2); (GPT-J
//   interleaved): (2i, 2i + 1); for i < rotary/2, frequency theta^(−2i / rotary). Dims past the
//   rotary dim are left as they are (partial rotary, Phi-2).
// The frequencies are computed once per layer (rope_frequencies, at init) into a table of
// rope_frequency_count() doubles (headway/plan.hpp): the arena's RoPE region for a layer, a
// backend's own memory otherwise. Angles are pos · frequency in double, so that positions near
// 128k stay exact to f32 precision. No allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"
#include "headway/plan.hpp"
#include "headway/status.hpp"

namespace headway {

// One pair's frequency theta^(−2i/rotary) after the config's rope_scaling (linear, llama3; YaRN
// depends on the pair's index: rope_frequencies).
double scaled_frequency(double inv_freq, const RopeConfig& rope);

// What cos and sin are multiplied by: YaRN's or LongRoPE's attention factor (config.hpp), 1
// otherwise.
double rope_attention_factor(const RopeConfig& rope);

// Writes the rope_frequency_count(rope, head_dim) scaled frequencies to `freqs` (LongRoPE: the
// short factors' table, then the long factors').
void rope_frequencies(const RopeConfig& rope, uint32_t head_dim, double* freqs);

// freqs: the table rope_frequencies() made for the same rope and head_dim (unread, and may be
// null, when rope.style is kNone). `end`: the position after the last token of the call these
// tokens belong to (a prefill chunk, a decode step; at least pos0 + n_tokens): LongRoPE rotates
// them with its long table when end passes original_max_seq, as transformers switches tables per
// forward call, and with the short one otherwise; dynamic NTK computes that call's frequencies
// from a grown base when end passes original_max_seq, and reads the table otherwise. Requires rope.scaling != kOther
// (KvCache::bind, the GPU backend and the layer reject it).
void apply_rope(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim, uint32_t pos0,
                uint32_t end, const RopeConfig& rope, const double* freqs);

// One token's rotation, which every head of the token shares: each pair's cos and sin, scaled.
// apply_rope's parts, for a caller that rotates a token's heads one at a time (KvCache::append).
struct TokenRotation {
  uint32_t pairs = 0;
  RopeStyle style = RopeStyle::kNeox;
  float cos[kMaxHeadDim / 2];
  float sin[kMaxHeadDim / 2];
};
// The frequencies a call ending at `end` rotates by (apply_rope's terms): `freqs` itself,
// LongRoPE's long table in it, or dynamic NTK's, computed into `dynamic` (kMaxHeadDim / 2 doubles).
const double* rope_call_frequencies(const RopeConfig& rope, uint32_t head_dim, uint32_t end, const double* freqs,
                                    double* dynamic);
// The rotation of the token at `pos`, from rope_call_frequencies' table. rope.style is not kNone.
void rope_token_rotation(const RopeConfig& rope, uint32_t head_dim, uint32_t pos, const double* call_freqs,
                         TokenRotation* r);
// One head [head_dim] of that token, rotated in place.
void rope_rotate_head(const TokenRotation& r, float* head);

// A cache's rotation of its queries (KvCache, CpuBackend, GpuBackend::rotate_queries): the last
// t_q of the `size` tokens appended since the reset, which sit at positions position − t_q ..
// position − 1, rotated in place as their keys were. q [t_q, n_heads, head_dim] f32, token t at
// q + t · q_token_stride. Nothing is written on error (null q, t_q 0 or past size, a stride below
// the query width); without RoPE it succeeds and leaves q as it is.
Status rotate_last_queries(const char* who, const Plan& plan, const double* freqs, uint32_t position, uint32_t size,
                           float* q, size_t q_token_stride, uint32_t t_q);
// rotate_last_queries' checks alone.
Status check_last_queries(const char* who, const Plan& plan, uint32_t size, const float* q, size_t q_token_stride,
                          uint32_t t_q);
// The same rotation for a caller that made those checks (a layer's forward): the one place a
// cache's queries get their RoPE (and, for a Hadamard-rotated cache, their rotation). The t_q
// queries sit at positions first_position ..; the frequencies are those of a call whose last
// position is call_end − 1, so that a call's queries rotated in parts (KvCache over its pool)
// get what they get at once (position − t_q, position).
void rotate_queries_unchecked(const Plan& plan, const double* freqs, uint32_t first_position, uint32_t call_end,
                              float* q, size_t q_token_stride, uint32_t t_q);

}  // namespace headway
