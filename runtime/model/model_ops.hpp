// The per-token ops of a model around its attention blocks: plain loops in f32, no allocation.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "headway/dtype.hpp"
#include "headway/weights.hpp"

namespace headway {

// y[i] = x[i] / sqrt(mean(x[i]²) + eps) · w for the t rows of x [t, n] (row stride n); y may be x.
// As transformers' LlamaRMSNorm: the mean of squares accumulated in f32 (simd/norm/norm.h), then
// 1/sqrt in f32.
void rms_norm(const float* x, const float* w, float* y, uint32_t t, uint32_t n, float eps);

// RMS norm of each of `n_heads` heads of head_dim values at x, in place: x · rsqrt(mean(x²) + eps)
// · (w + offset), or without a weight when w is null (q/k norms, Gemma's v norm, MLA's latents).
void rms_norm_heads(float* x, uint32_t n_heads, uint32_t head_dim, const TensorRef* w, float eps, float offset);

// y[i] = (x[i] − mean) / sqrt(var + eps) · w + b for the t rows of x [t, n]; y may be x. As
// torch's LayerNorm: mean and (biased) variance over the row in f32.
void layer_norm(const float* x, const float* w, const float* b, float* y, uint32_t t, uint32_t n, float eps);

// The GELU of t rows of `ffn` values at x (row stride 2·ffn) into y (row stride 2·ffn): exact,
// 0.5 · x · (1 + erf(x / √2)), as torch's GELU and BERT's "gelu".
void gelu(const float* x, float* y, uint32_t t, uint32_t ffn);

// The SwiGLU gate over t rows of h [t, 2·ffn] holding (gate | up): h[i][j] = silu(gate) · up for
// j < ffn, in place (the up half is left as it was).
void swiglu(float* h, uint32_t t, uint32_t ffn);

// GeGLU likewise: h[i][j] = gelu_tanh(gate) · up, with torch's tanh approximation
// 0.5 · g · (1 + tanh(√(2/π) · (g + 0.044715 · g³))) (Gemma's "gelu_pytorch_tanh").
void geglu(float* h, uint32_t t, uint32_t ffn);

// y = c · tanh(y / c) over n values (Gemma 2's final_logit_softcapping).
void softcap_rows(float* y, size_t n, float c);

// The logistic sigmoid 1 / (1 + e^−x), and x times it (SiLU), in f32.
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }

// x[i] += y[i] for n values (the residual add).
inline void add_rows(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace headway
