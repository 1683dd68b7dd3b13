// The normalized Walsh-Hadamard rotation of a quantized KV cache (Config::kv_rotation).
//
// H_b is the b × b Sylvester matrix (H_1 = [1], H_2b = [[H_b, H_b], [H_b, −H_b]]) times 1/sqrt(b):
// orthonormal and symmetric, so H_b · H_b = I. A row of head_dim values is rotated block by block,
// the block-diagonal diag(H_b, …, H_b) with b = hadamard_block(head_dim): the largest power of two
// that divides head_dim, and at least 32 (the length of a q8_0/q4_0 block, so that each quantized
// block holds whole rotated blocks). 64 → 64, 128 → 128, 96 → 32 (3 blocks), 576 → 64 (9 blocks),
// 288 → 32 (9 blocks); 80 or 40 (whose largest power-of-two divisor is 16 or 8) cannot be rotated.
// (llama.cpp rotates K by its largest power-of-two divisor too, but only head sizes that 64
// divides, and V by blocks of 64.)
//
// A cache rotates each head's K (after RoPE) and V by the same H before it quantizes them, and the
// queries of its attention likewise; Q·Kᵀ is unchanged (Hq·Hk = q·k), and O = H · Σ p (Hv), so the
// attention's output is the unrotated one up to rounding. What the rotation is for: one large
// channel no longer sets the scale of its whole block (each rotated value mixes b channels).
//
// A fast transform: log2(b) stages of b/2 butterflies (a + c, a − c) in f32, then one multiply by
// 1/sqrt(b), in place. No allocation, no scratch; the same bits on every machine (no FMA: each
// butterfly is one add or subtract).
#pragma once

#include <cstddef>
#include <cstdint>

namespace headway {

// The block a row of n values is rotated in: the largest power of two dividing n if it is at
// least 32, else 0 (n cannot be rotated).
constexpr uint32_t hadamard_block(uint32_t n) {
  if (n == 0) return 0;
  const uint32_t b = n & (~n + 1u);  // the lowest set bit: the largest power of two dividing n
  return b >= 32 ? b : 0;
}

// Rotates x[0..n) in place by diag(H_b, …) with b = hadamard_block(n). Requires
// hadamard_block(n) != 0 (does nothing otherwise). Applying it twice gives x back (to rounding).
void hadamard_rotate(float* x, uint32_t n);

// Rotates each head of n_tokens rows in place: token t's head h at x + t · token_stride + h ·
// head_dim, head_dim values each (q [t, n_heads, head_dim], or a fused QKV row's q part).
void hadamard_rotate_heads(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim);

}  // namespace headway
