// Gated DeltaNet (the gated delta rule of Qwen3.5 / Qwen3-Next's linear-attention layers) for one
// value head: transformers' torch_recurrent_gated_delta_rule and torch_chunk_gated_delta_rule
// after q and k are L2-normalized and q scaled by dk^-1/2 (the caller does both). Highway dispatch
// happens inside. Pure functions over pointers and sizes: no allocation, no I/O, no threads (the
// caller splits heads across threads; nothing here depends on them, and the same inputs give
// bitwise the same outputs every call).
//
//   S [dk, dv] f32 row-major, S[i·dv + j] (i over the key dim), updated in place.
//   For each token r in order:
//     S ← exp(g_r)·S;  u = Sᵀk_r;  δ = β_r·(v_r − u);  S ← S + k_r δᵀ;  o_r = Sᵀq_r
//   (o_r reads the updated S).
//
// Reads exactly dk floats of each q/k row and dv of each v row; writes exactly dv floats of each out
// row and the dk·dv floats of S. out must not overlap S, q, k, v, g or beta. g ≤ 0 (Qwen3.5's
// g = −exp(A_log)·softplus(a + dt_bias) always is): the chunked form takes exp of differences of
// cumulative g, which a positive g could overflow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/detail/attention_policy.hpp"

namespace headway {
namespace simd {

struct GatedDeltaArgs {
  float* state = nullptr;    // [dk, dv] f32, updated in place
  uint32_t dk = 0, dv = 0;   // key and value head sizes (any ≥ 1; Qwen3.5 uses 128/128)
  const float* q = nullptr;  // token r's query at q + r·qk_stride ([dk], normalized and scaled)
  const float* k = nullptr;  // token r's key at k + r·qk_stride ([dk], normalized)
  size_t qk_stride = 0;      // floats
  const float* v = nullptr;  // token r's value at v + r·v_stride ([dv])
  size_t v_stride = 0;
  const float* g = nullptr;     // token r's log decay at g[r·gb_stride] (≤ 0)
  const float* beta = nullptr;  // token r's beta at beta[r·gb_stride]
  size_t gb_stride = 0;
  float* out = nullptr;  // token r's output at out + r·out_stride ([dv])
  size_t out_stride = 0;
  uint32_t t = 0;  // tokens
};

// Null when the arguments are usable, else what is wrong with them (dk or dv 0, a null pointer with
// t > 0, a stride smaller than its row). t == 0 with valid sizes is usable: nothing happens.
const char* gated_delta_args_error(const GatedDeltaArgs& a);

// Token by token (decode, and short prefills): per token, one pass over S computes Sᵀk and Sᵀq
// from the old S, a second read-modify-write pass writes exp(g)·S + kδᵀ; the output is
// exp(g)·Sᵀq + (k·q)·δ. Both passes go over one block of columns of S (a few vectors wide) at a
// time, so the block is still in L1 for the second. Splitting the tokens over several calls gives
// bitwise the same outputs and state. Precondition: gated_delta_args_error(a) == nullptr.
void gated_delta_recurrent(const GatedDeltaArgs& a);

// The WY/UT chunked form (transformers' torch_chunk_gated_delta_rule), chunks of kGatedDeltaChunk
// tokens (headway/detail/attention_policy.hpp), the last one partial: the same result as
// gated_delta_recurrent up to rounding.
// Per chunk of C tokens, with c_r the cumulative log decay inside the chunk:
//   A[r][s] = β_r (k_r·k_s) exp(c_r − c_s) for s < r (strictly lower)
//   (I + A) U = diag(β) V,  (I + A) W = diag(β exp(c)) K       (forward substitution)
//   V' = U − W S
//   O = diag(exp(c)) Q S + (QKᵀ ∘ exp(c_r − c_s), s ≤ r, diagonal kept) V'
//   S ← exp(c_last) S + Kᵀ diag(exp(c_last − c)) V'
// Each exp(c_r − c_s) is taken of the running sum of the g between s and r, not of a difference of
// cumulative sums, which cancels (gated_delta-inl.h: ChunkDecays). The products with S run in
// register tiles of 4 rows × 2 vectors. scratch holds gated_delta_chunk_scratch_floats(dk, dv)
// floats (headway/detail/attention_policy.hpp; 64-byte aligned keeps the tiles' rows on cache lines, any
// 4-byte alignment is correct), which it overwrites; it must not overlap the arguments.
// Precondition: gated_delta_args_error(a) == nullptr. Its matrix products beat the recurrent
// form's two passes over S per token from a few tokens on; one token pays a whole chunk's setup.
void gated_delta_chunked(const GatedDeltaArgs& a, float* scratch);

}  // namespace simd
}  // namespace headway
