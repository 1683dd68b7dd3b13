// The MLP's gate activations over f32 rows. Highway dispatch happens inside. Pure functions over
// pointers and sizes: no allocation, no I/O, no threads (the caller splits rows across threads;
// each value depends on its own inputs alone, so no split changes a bit).
#pragma once

#include <cstddef>

namespace headway {
namespace simd {

// gate[i] = SiLU(gate[i]) · up[i] for i < n (SwiGLU: Llama, Qwen, SmolLM, Mistral...), with
// SiLU(g) = g · σ(g) and σ from exp(−|g|), which never overflows. Within a few ulp of
// g / (1 + exp(−g)) · up in f32; NaN in either input gives NaN, as does −inf · σ(−inf) = −inf · 0.
// gate and up do not overlap; n = 0 reads nothing.
void silu_mul(float* gate, const float* up, size_t n);

}  // namespace simd
}  // namespace headway
