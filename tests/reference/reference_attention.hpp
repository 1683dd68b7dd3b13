// The double-precision reference every attention kernel and backend is held against: plain
// O(T_q · T_kv · head_dim) loops, the semantics of the README's "Attention" section (spelled out
// below), nothing clever.
//
//   O = softmax(scale · Q Kᵀ + mask) V. Query row i sits at position p = i + t_kv − t_q; causal
//   keeps keys j <= p; window W > 0 keeps j > p − W (without causal only that lower bound);
//   softcap c > 0 replaces a logit s by c · tanh(s / c) before the mask; query head h reads kv
//   head h / (n_heads / n_kv_heads); a row that sees no key is 0. NaN anywhere in a row's visible
//   inputs makes the affected outputs NaN, as IEEE arithmetic does. A sink logit s_h (gpt-oss)
//   joins the softmax of query head h as one more logit with no value, after softcap and mask:
//   o = Σ_j e^{l_j − m} v_j / (Σ_j e^{l_j − m} + e^{s_h − m}), m = max(max_j l_j, s_h).
//   Sink tokens S (StreamingLLM, with a window): keys j < S stay visible through the window,
//   causal still applies. ALiBi slope m_h adds −m_h · |p − j| to the logit after softcap. A prefix
//   P (with causal) keeps keys j < P visible to every row as far as causality goes: causal keeps
//   j <= max(p, P − 1). In a packed batch each sequence is all of this on its own rows and keys.
//   A general mask [t_q, t_kv] hides key j from row i (bool 0, additive −inf) or adds its entry to
//   the logit after ALiBi.
//
// K and V come as f32 arrays already rounded to their storage dtype (round_kv below), so the
// reference sees exactly the values the kernel reads. V has a width of its own (v_head_dim) and
// sits anywhere in its rows: a separate [t_kv, n_kv_heads, v_head_dim] array, or a slice of K's
// rows (MLA's cache row [rope key | latent] is K, and its latent part alone is V).
#pragma once

#include <cstdint>
#include <vector>

namespace headway {
namespace test {

struct RefAttention {
  uint32_t t_q = 0;
  uint32_t t_kv = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;  // Q's and K's width
  // V of key j, kv head g: v_head_dim values from v + (j · n_kv_heads + g) · v_row_stride +
  // v_offset. v_head_dim 0: head_dim; v_row_stride 0: v_head_dim (V dense [t_kv, n_kv_heads,
  // v_head_dim]). MLA: v = k, v_row_stride = head_dim, v_offset = the rope width.
  uint32_t v_head_dim = 0;
  uint32_t v_row_stride = 0;
  uint32_t v_offset = 0;
  double scale = 0.0;
  double softcap = 0.0;  // 0 = off
  bool causal = false;
  uint32_t window = 0;               // 0 = none
  std::vector<double> sinks;         // [n_heads] sink logits, or empty: none
  uint32_t sink_tokens = 0;          // 0 = none
  std::vector<double> alibi_slopes;  // [n_heads] ALiBi slopes, or empty: none
  uint32_t prefix = 0;               // prefix-LM: with causal, keys j < prefix are seen by every row
  bool window_symmetric = false;     // without causal, the window bounds from above too: |p − j| < W
  // A packed batch: cumulative query and key lengths [n_seqs + 1] (cu_k empty: cu_q's), or empty:
  // one sequence. Query row i of sequence b sees only keys of b, at local position
  // p = (i − cu_q[b]) + len_k(b) − len_q(b), and every rule above counts from b's start.
  std::vector<uint32_t> cu_q, cu_k;
  // A general mask [t_q, t_kv] over the whole call, or empty: none. mask_bool: 0 hides key j from
  // row i. mask_additive: added to the logit after ALiBi; −inf hides the key.
  std::vector<uint8_t> mask_bool;
  std::vector<double> mask_additive;
};

// q [t_q, n_heads, head_dim], k [t_kv, n_kv_heads, head_dim] (dense, row-major), v as RefAttention
// places it (by default [t_kv, n_kv_heads, head_dim]); returns O [t_q, n_heads, v_head_dim].
std::vector<double> reference_attention(const RefAttention& a, const float* q, const float* k, const float* v);

// Whether query row i sees key j, and whether it sees any key.
bool reference_key_visible(const RefAttention& a, uint32_t i, uint32_t j);
bool reference_row_sees_a_key(const RefAttention& a, uint32_t i);

// ALiBi slopes of n_heads heads by the standard rule (Press et al., BLOOM): for a power of two n,
// m_h = 2^(−b(h+1)/n); otherwise the n0 = 2^floor(log2 n) slopes of n0 heads, then the odd ones
// of 2·n0 heads, 2^(−b(2i+1)/(2·n0)), for the n − n0 heads left; b = 8 but for MPT's
// alibi_bias_max. Computed in double, here apart from the library's.
std::vector<double> reference_alibi_slopes(uint32_t n_heads, double max_bias = 8.0);

// Storage dtypes, round-to-nearest-even; NaN stays NaN (quiet), overflow gives infinity.
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t b);

}  // namespace test
}  // namespace headway
