// The model's row norms over f32 rows. Highway dispatch happens inside. Pure functions over
// pointers and sizes: no allocation, no I/O, no threads. A row's result depends on that row alone
// (its sum's order is fixed by n and the target), never on how many rows a call takes.
#pragma once

#include <cstddef>

namespace headway {
namespace simd {

// y[i] = w · (x[i] · 1 / sqrt(mean(x[i]²) + eps)) for the t rows of x [t, n] (row stride n), as
// transformers' LlamaRMSNorm in f32: the sum of squares in f32 lanes (a vector of partial sums,
// then their total), 1/sqrt in f32. y may be x; otherwise they do not overlap. n ≥ 1.
void rms_norm(const float* x, const float* w, float* y, size_t t, size_t n, float eps);

}  // namespace simd
}  // namespace headway
